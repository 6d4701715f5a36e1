// Package faultproxy is an in-process TCP proxy that puts network faults
// between a client under test and a real server. Its faults are a slow
// link, a thin one, a peer that accepts and hangs up, a connection cut
// mid-stream, a half-open peer that never answers, a reset.
//
// [Start] listens on a free loopback port; point the client at
// [Proxy.Addr] instead of the server. Each accepted connection gets its own
// connection to the upstream address, and bytes are copied both ways until
// either side closes.
//
// # Faults
//
// Faults are switched at run time, from any goroutine, and apply at once
// to the connections already open as well as to new ones:
//
//   - [Proxy.Delay] holds every chunk read in a direction for a while
//     before forwarding it: added latency.
//   - [Proxy.Bandwidth] paces a direction to a number of bytes per second,
//     per connection.
//   - [Proxy.Drop] accepts new connections and closes them at once.
//   - [Proxy.CutAfter] closes each connection once a number of further
//     bytes went through in a direction: a cut mid-reply or mid-request.
//   - [Proxy.Blackhole] stops forwarding in both directions but keeps
//     every socket open, as a peer that vanished without a FIN or RST
//     would. What is read meanwhile is held, and forwarded on [Proxy.Heal]
//     as a healed partition would deliver it.
//   - [Proxy.Strand] makes the connections open now half-open for good,
//     new ones unaffected: a NAT or load balancer that forgot them.
//   - [Proxy.Reset] closes every open connection with a TCP RST.
//
// [Proxy.Heal] clears every fault but Strand. [Proxy.Close] stops the listener,
// closes every connection and returns once no goroutine of the proxy is
// left.
//
// The proxy is for tests: it listens only on 127.0.0.1 and makes no
// attempt at speed.
package faultproxy
