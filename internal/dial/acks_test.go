package dial

import (
	"io"
	"net"
	"runtime"
	"testing"
	"time"
)

// TestAcksFollowWhatThePeerReceived: on a plain TCP connection, a write
// of more than the peer takes in returns with bytes still unacknowledged,
// and Acks counts them as they are read at the other end, until every
// byte written is acknowledged. (The socket buffers of loopback hold a
// few MiB: 8 MiB is more.)
func TestAcksFollowWhatThePeerReceived(t *testing.T) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		if _, _, ok := (Acks{}).Read(); ok {
			t.Fatal("the zero Acks reads something")
		}
		t.Skip("Acks knows nothing on this system")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			peer <- nil
			return
		}
		peer <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	srv := <-peer
	if srv == nil {
		t.Fatal("accept failed")
	}
	defer srv.Close()

	a := AcksOf(nc)
	acked0, unacked0, ok := a.Read()
	if !ok || unacked0 != 0 {
		t.Fatalf("Acks of a fresh connection = %d acked, %d unacknowledged, ok %v; want ok with nothing unacknowledged", acked0, unacked0, ok)
	}
	if _, _, ok := AcksOf(struct{ net.Conn }{nc}).Read(); ok {
		t.Error("Acks of a wrapped connection (whose bytes may not be those on the wire) reads something")
	}

	const size = 8 << 20
	if _, err := nc.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	if _, err := io.ReadFull(srv, one); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := nc.Write(make([]byte, size))
		done <- err
	}()
	// Nothing is read at the other end: the write stops short, some of it
	// acknowledged (in the peer's receive buffer), the rest queued.
	var acked, unacked int64
	deadline := time.Now().Add(5 * time.Second)
	for {
		acked, unacked, ok = a.Read()
		if !ok {
			t.Fatal("Acks stopped reading")
		}
		if unacked > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if unacked == 0 {
		t.Fatalf("8 MiB written to a peer that reads nothing: %d acknowledged, nothing unacknowledged", acked-acked0)
	}
	go io.Copy(io.Discard, srv)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for {
		acked, unacked, _ = a.Read()
		if acked-acked0 == size+1 && unacked == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the peer read everything: %d acknowledged, %d not; want %d and 0", acked-acked0, unacked, size+1)
		}
		time.Sleep(time.Millisecond)
	}
}
