package redisx

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Operation names and attribute sets for spans and the
// db.client.operation.duration histogram. Every attribute set a
// measurement can carry is built once, on first use, and kept, so that
// recording a duration allocates nothing.

// opKind is a Client method, named after its Redis command.
type opKind int

const (
	opGet       opKind = iota // Get and AppendGet
	opSet                     // Set
	opDel                     // Del
	opMGet                    // MGet
	opMSet                    // MSet
	opGetOrLoad               // GetOrLoad, which is not a Redis command
	opPing                    // Ping
	opPipeline                // DoMulti
	numOps
)

// maxCommandNames bounds the distinct command names Do reports as
// db.operation.name; later ones are reported as otherOperation.
const maxCommandNames = 128

// otherOperation is the db.operation.name of a Do whose command name is
// not a plain name, or comes after maxCommandNames others.
const otherOperation = "OTHER"

// operations holds a client's operations. It is created once and used
// through its pointer.
type operations struct {
	base  []attribute.KeyValue
	fixed [numOps]operation
	other operation

	cmds  sync.Map   // Do's command name → *operation
	mu    sync.Mutex // orders adding to cmds
	ncmds int        // len(cmds); guarded by mu
}

// operation is one db.operation.name with its attribute sets.
type operation struct {
	name  string
	attrs []attribute.KeyValue // base attributes and db.operation.name: a span's
	ok    []metric.RecordOption
	errs  sync.Map // error.type → []metric.RecordOption
}

func newOperations(base []attribute.KeyValue) *operations {
	o := &operations{base: base}
	for k, name := range [numOps]string{
		opGet: "GET", opSet: "SET", opDel: "DEL", opMGet: "MGET", opMSet: "MSET",
		opGetOrLoad: "GETORLOAD", opPing: "PING", opPipeline: "PIPELINE",
	} {
		o.init(&o.fixed[k], name)
	}
	o.init(&o.other, otherOperation)
	return o
}

func (o *operations) init(op *operation, name string) {
	op.name = name
	op.attrs = append(o.base[:len(o.base):len(o.base)], attrDBOperation.String(name))
	op.ok = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(op.attrs...))}
}

// command returns the operation of a Do with args.
func (o *operations) command(args []any) *operation {
	name, ok := commandName(args)
	if !ok {
		return &o.other
	}
	if op, ok := o.cmds.Load(name); ok {
		return op.(*operation)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if op, ok := o.cmds.Load(name); ok {
		return op.(*operation)
	}
	if o.ncmds >= maxCommandNames {
		return &o.other
	}
	op := &operation{}
	o.init(op, name)
	o.cmds.Store(name, op)
	o.ncmds++
	return op
}

// commandName is the uppercased command name of args, when it is a plain
// one: 1 to 32 letters, digits, '.', '_' or '-' (JSON.GET, CLIENT…).
// Anything else may be a key passed by mistake, and would make an
// attribute of unbounded cardinality.
func commandName(args []any) (string, bool) {
	if len(args) == 0 {
		return "", false
	}
	var name string
	switch a := args[0].(type) {
	case string:
		name = a
	case []byte:
		name = string(a)
	default:
		return "", false
	}
	if len(name) == 0 || len(name) > 32 {
		return "", false
	}
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '.', b == '_', b == '-':
		default:
			return "", false
		}
	}
	return strings.ToUpper(name), true
}

// options returns the measurement options of a call of op that ended with
// err: a miss is a success; an error adds error.type and, for a server
// error reply, db.response.status_code.
func (op *operation) options(err error) []metric.RecordOption {
	if err == nil || isMiss(err) {
		return op.ok
	}
	typ, status := errorType(err)
	if opts, ok := op.errs.Load(typ); ok {
		return opts.([]metric.RecordOption)
	}
	attrs := append(op.attrs[:len(op.attrs):len(op.attrs)], attrErrorType.String(typ))
	if status != "" {
		attrs = append(attrs, attrDBStatusCode.String(status))
	}
	opts, _ := op.errs.LoadOrStore(typ, []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))})
	return opts.([]metric.RecordOption)
}

// isMiss reports whether err is a miss (ErrNotFound), which is an answer,
// not a failure; a loader's error that wraps ErrNotFound is a failure.
func isMiss(err error) bool {
	return errors.Is(err, ErrNotFound) && !errors.Is(err, ErrLoad)
}

// errorType classifies err into error.type, from a fixed set. A server
// error reply is named by its prefix (ERR, WRONGTYPE, MOVED…), which is
// also returned as status, for db.response.status_code; a prefix Redis
// does not document is "_OTHER", the conventions' fallback, with no
// status. Other errors are named after the sentinel they wrap: load,
// closed, auth, invalid_argument, unsupported, timeout (a deadline),
// canceled, connection; anything else is "_OTHER".
func errorType(err error) (typ, status string) {
	var re redis.Error
	switch {
	case errors.Is(err, ErrLoad):
		return "load", ""
	case errors.Is(err, ErrClosed):
		return "closed", ""
	case errors.Is(err, ErrAuth):
		return "auth", ""
	case errors.Is(err, ErrInvalidArgument):
		return "invalid_argument", ""
	case errors.Is(err, ErrUnsupported):
		return "unsupported", ""
	case errors.As(err, &re):
		if p := serverErrorPrefix(string(re)); p != "" {
			return p, p
		}
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", ""
	case errors.Is(err, context.Canceled):
		return "canceled", ""
	case errors.Is(err, ErrConnection):
		return "connection", ""
	}
	return "_OTHER", ""
}

// serverErrorPrefix returns the first word of a server error reply when
// it is one of the prefixes Redis replies with, and "" otherwise: the set
// is fixed so that the attribute's cardinality is.
func serverErrorPrefix(msg string) string {
	p, _, _ := strings.Cut(msg, " ")
	switch p {
	case "ERR", "WRONGTYPE", "NOSCRIPT", "BUSY", "BUSYKEY", "BUSYGROUP", "NOGROUP",
		"NOAUTH", "WRONGPASS", "NOPERM", "NOPROTO", "OOM", "READONLY", "LOADING",
		"MASTERDOWN", "MISCONF", "EXECABORT", "NOREPLICAS", "UNKILLABLE", "NOTBUSY",
		"UNBLOCKED", "CROSSSLOT", "CLUSTERDOWN", "TRYAGAIN", "MOVED", "ASK":
		return p
	}
	return ""
}

// measure is one call being traced, timed, or both.
type measure struct {
	op    *operation
	span  trace.Span // nil: not traced
	start time.Time  // zero: not timed
}

// on reports whether a call must be traced or timed. Without an SDK
// installed, the histogram of the global provider reports itself
// disabled: the call then costs this check and nothing else.
func (t *telemetry) on(ctx context.Context) bool {
	return t.tracer != nil || t.hist != nil && t.hist.Enabled(ctx)
}

// op returns the operation of a Client method; only when on.
func (t *telemetry) op(k opKind) *operation { return &t.ops.fixed[k] }

// command returns the operation of a Do with args; only when on.
func (t *telemetry) command(args []any) *operation { return t.ops.command(args) }

// begin starts measuring a call of op (batch > 0: the number of keys).
func (t *telemetry) begin(ctx context.Context, op *operation, batch int) (context.Context, measure) {
	m := measure{op: op}
	if t.tracer != nil {
		ctx, m.span = t.startSpan(ctx, op, batch)
	}
	if t.hist != nil && t.hist.Enabled(ctx) {
		m.start = time.Now()
	}
	return ctx, m
}

// end records the call's duration and ends its span.
func (t *telemetry) end(ctx context.Context, m measure, err error) {
	if !m.start.IsZero() {
		t.hist.Record(ctx, time.Since(m.start).Seconds(), m.op.options(err)...)
	}
	if m.span != nil {
		endSpan(m.span, err)
	}
}
