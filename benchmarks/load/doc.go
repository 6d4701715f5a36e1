// Package load offers an operation to many workers at once, closed loop
// or open loop at a fixed rate, and records every latency.
//
// In closed loop ([Closed], [ClosedLoop]) each worker sends its next
// request as soon as the last returns. In open loop ([Open]) requests are
// scheduled at a fixed total rate, one worker at a time pacing the sends
// (see pacer.go), and every latency is measured from the request's
// intended send time, so that a slow reply delays the latencies of the
// requests behind it (no coordinated omission); the client's own
// lateness in sending is recorded beside them. Latencies go to one HDR
// histogram per worker ([NewHistogram]), merged by the caller.
package load
