package pgtest

import (
	"net"
	"net/url"
	"testing"
	"time"
)

// The server starts and accepts connections on its port.
func TestStart(t *testing.T) {
	s := Start(t)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", u.Host, err)
	}
	c.Close()
}
