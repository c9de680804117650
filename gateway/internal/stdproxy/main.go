// Command stdproxy is a bare net/http/httputil.ReverseProxy with the
// gateway binary's --host, --port and --upstream flags. It authorizes
// nothing; BenchmarkProcessesVersusNginx runs it beside the gateway and
// nginx to show what any Go reverse proxy process costs on the machine.
package main

import (
	"flag"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
)

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.String("port", "8080", "port to listen on")
	upstream := flag.String("upstream", "", "downstream base URL")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil {
		log.Fatal(err)
	}
	u.Path = ""
	p := httputil.NewSingleHostReverseProxy(u)
	direct := p.Director
	p.Director = func(r *http.Request) {
		direct(r)
		r.Host = "localhost" // the go-sdk refuses a loopback request for another host
	}
	log.Fatal(http.ListenAndServe(net.JoinHostPort(*host, *port), p))
}
