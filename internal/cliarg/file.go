package cliarg

import (
	"fmt"
	"io"
	"os"
)

// ReadFile reads the file at path, named by the flag name (such as
// "--jwt-jwks"), at most max bytes: a larger one (a wrong path, /dev/zero)
// is refused, not read whole into memory. Its errors name the flag.
func ReadFile(name, path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s %s: the file is over %s, the most it may hold", name, path, size(max))
	}
	return data, nil
}

// size writes n bytes in MiB when it is a whole number of them.
func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
