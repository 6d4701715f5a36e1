//go:build darwin || linux || openbsd

package mux

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// TestWriteNowNeverWaits: writeNow writes what a socket nobody reads
// takes, returns at once with fewer bytes than asked (not an error), and
// the peer then reads exactly those bytes, in order; the rest written
// next follows them.
func TestWriteNowNeverWaits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	peer, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer peer.Close()
	w := newNowWriter(nc)
	if w == nil {
		t.Fatal("newNowWriter(a TCP connection) = nil")
	}

	// 32 MiB in three chunks: more than any socket buffer takes at once.
	chunks := [][]byte{
		bytes.Repeat([]byte("a"), 5<<20),
		bytes.Repeat([]byte("b"), 11<<20),
		bytes.Repeat([]byte("c"), 16<<20),
	}
	var all []byte
	for _, b := range chunks {
		all = append(all, b...)
	}
	start := time.Now()
	n, err := w.writeNow(append([][]byte(nil), chunks...))
	if took := time.Since(start); err != nil || n <= 0 || n >= len(all) || took > time.Second {
		t.Fatalf("writeNow(32 MiB, nobody reading) = %d, %v after %v; want part of it, no error, at once", n, err, took)
	}
	if len(chunks[0]) != 5<<20 || chunks[0][0] != 'a' {
		t.Fatal("writeNow changed the slices it was given")
	}
	// The socket is full now: a second write takes nothing, or next to
	// nothing, and still returns at once.
	start = time.Now()
	m, err := w.writeNow([][]byte{all[n:]})
	if took := time.Since(start); err != nil || took > time.Second {
		t.Fatalf("writeNow on a full socket = %d, %v after %v; want no error, at once", m, err, took)
	}
	n += m
	got := make([]byte, len(all))
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(peer, got)
		done <- err
	}()
	// The rest, from where the first write stopped, as requeue leaves it.
	rest := [][]byte{all[n:]}
	for len(rest[0]) > 0 {
		m, err := w.writeNow([][]byte{rest[0]})
		if err != nil {
			t.Fatal(err)
		}
		rest[0] = rest[0][m:]
		if m == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, all) {
		t.Fatal("the peer read the bytes out of order")
	}
}

// TestRequeuePutsTheRestFirst: what a write left unwritten goes back
// ahead of what was buffered since, from the byte where it stopped; the
// chunks written whole are kept for reuse.
func TestRequeuePutsTheRestFirst(t *testing.T) {
	// The chunks are "AAAA|" (5 bytes), "BBBB|" (5) and "cc|" (3).
	for _, tc := range []struct {
		n    int
		want string
		kept int
	}{
		{0, "AAAA|BBBB|cc|later|", 0},
		{3, "A|BBBB|cc|later|", 0},
		{5, "BBBB|cc|later|", 1},
		{8, "B|cc|later|", 1},
		{10, "cc|later|", 2},
		{12, "|later|", 2},
	} {
		c := &muxConn{}
		c.out.full = [][]byte{[]byte("later|")}
		c.out.cur = []byte("now")
		o := outbuf{full: [][]byte{[]byte("AAAA|"), []byte("BBBB|")}, cur: []byte("cc|")}
		n := tc.n
		c.requeue(o, n)
		var got string
		for _, b := range c.out.full {
			got += string(b)
		}
		if got != tc.want || string(c.out.cur) != "now" || len(c.free) != tc.kept {
			t.Errorf("requeue after %d bytes: queued %q (current chunk %q), %d chunks kept; want %q, \"now\", %d",
				n, got, c.out.cur, len(c.free), tc.want, tc.kept)
		}
	}
}

// TestRequeueDoesNotKeepABigChunkAlive: the unwritten tail of a chunk too
// large to keep for reuse is copied, so that keeping the tail once it is
// written does not keep the whole chunk's array.
func TestRequeueDoesNotKeepABigChunkAlive(t *testing.T) {
	c := &muxConn{}
	big := bytes.Repeat([]byte("v"), 1<<20)
	c.requeue(outbuf{full: [][]byte{big}}, len(big)-100)
	if len(c.out.full) != 1 || len(c.out.full[0]) != 100 {
		t.Fatalf("queued %d chunks; want the 100-byte tail", len(c.out.full))
	}
	if tail := c.out.full[0]; &tail[:cap(tail)][cap(tail)-1] == &big[len(big)-1] {
		t.Error("the tail shares the 1 MiB chunk's array")
	}
}
