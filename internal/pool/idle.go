package pool

import "time"

// closedWhileIdle reports whether the server closed c, or put bytes
// nobody asked for on it, while it sat idle (see peerGone). The read
// deadline the last call left may have passed meanwhile: it would fail
// the look itself, so it is cleared first (the next call sets its own).
func (c *pconn) closedWhileIdle() bool {
	if !c.deadline.IsZero() && !time.Now().Before(c.deadline) {
		c.nc.SetDeadline(time.Time{})
		c.deadline, c.fromTimeout = time.Time{}, false
	}
	return c.r.Buffered() > 0 || peerGone(c.nc)
}

// peekIdle is how long a connection must have been idle for acquire to
// check, before lending it, that the server has not closed it meanwhile
// (peerGone: one system call, which a connection in steady use is spared).
const peekIdle = 10 * time.Millisecond
