package stdio_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/mcpguard/mcpguard/stdio"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This example isolates pipes standing in for a server's standard streams
// (a real server calls stdio.Isolate(nil) first thing in main, and its
// handlers' stray prints go to os.Stdout): the handler's print lands in the
// log file, and the client reads clean JSON-RPC.
func ExampleIsolate() {
	serverIn, clientOut, err := os.Pipe() // client -> server
	if err != nil {
		log.Fatal(err)
	}
	clientIn, serverOut, err := os.Pipe() // server -> client
	if err != nil {
		log.Fatal(err)
	}
	logFile, err := os.CreateTemp("", "stdio-example-*.log")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(logFile.Name())

	t, err := stdio.Isolate(&stdio.Options{Stdin: serverIn, Stdout: serverOut, Stderr: logFile})
	if err != nil {
		log.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "example", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "greet", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(serverOut, "debug: greet called") // a stray print
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
		})
	done := make(chan error, 1)
	go func() { done <- server.Run(context.Background(), t) }()

	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "greet"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("client got:", res.Content[0].(*mcp.TextContent).Text)
	cs.Close()
	<-done

	b, err := os.ReadFile(logFile.Name())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("log: %s", b)
	// Output:
	// client got: hello
	// log: debug: greet called
}
