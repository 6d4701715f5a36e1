// Package command knows what Redis commands do with their arguments. It
// says which are keys, whether the command writes, how a cluster client
// should send a keyless command (to one node, every master, every node) and
// combine the replies, which connection it needs (Classify: a blocking
// command needs one of its own, one that changes a connection's state is
// refused) and how long it may block the server's answer (BlockTime). The
// table is generated from a real server's COMMAND reply (see gen.go), and
// keys are found by interpreting its key specifications exactly as the
// server does (db.c, getKeysUsingKeySpecs), movable-key commands such as
// EVAL, XREAD and ZUNIONSTORE included.
//
// A cluster routes a command by its keys; a near-cache invalidates the
// keys of a write. Both need the same answer for every command, so it
// lives here once.
package command

//go:generate go run gen.go

import (
	"strconv"
	"strings"

	"github.com/redisx-go/kit/internal/resp"
)

// Spec describes one command (or one subcommand of a container command
// such as OBJECT or CONFIG, named "object|encoding"). Specs are shared and
// must not be modified.
type Spec struct {
	Name     string // lower case; "container|sub" for a subcommand
	Arity    int    // argument count including the name; negative: at least -Arity
	Flags    Flags
	Request  RequestPolicy
	Response ResponsePolicy
	Keys     []KeySpec
}

// Flags are a command's COMMAND flags that matter to a client.
type Flags uint16

// Command flags.
const (
	Write Flags = 1 << iota
	ReadOnly
	Admin
	PubSub
	NoScript
	Blocking
	MovableKeys
	NoMulti
	NoMandatoryKeys
)

// RequestPolicy is the server's hint for sending a keyless command on a
// cluster (COMMAND's request_policy tip).
type RequestPolicy uint8

// Request policies.
const (
	DefaultRequest RequestPolicy = iota // keys decide; keyless: any one node
	AllNodes                            // every node, replicas included (SCRIPT LOAD)
	AllShards                           // every master (DBSIZE, KEYS, FLUSHALL)
	MultiShard                          // split by key slot (MSET, DEL across slots)
	SpecialRequest                      // needs its own logic (SCAN)
)

// ResponsePolicy says how the replies of a command sent to several nodes
// combine into one (COMMAND's response_policy tip).
type ResponsePolicy uint8

// Response policies.
const (
	DefaultResponse ResponsePolicy = iota // arrays concatenated (KEYS); one reply otherwise
	OneSucceeded                          // any success wins
	AllSucceeded                          // every node must succeed; one reply returned
	AggLogicalAnd
	AggLogicalOr
	AggMin
	AggMax
	AggSum // integers summed (DBSIZE)
	SpecialResponse
)

// KeyFlags describe how a command uses the keys of one key specification.
type KeyFlags uint8

// Key specification flags.
const (
	KeyRW            KeyFlags = 1 << iota // read and written
	KeyRO                                 // only read
	KeyOW                                 // overwritten without being read
	KeyRM                                 // removed
	KeyIncomplete                         // the spec may miss some keys
	KeyVariableFlags                      // the access depends on other arguments
)

// KeySpec is one key specification: where the search for its keys begins
// (an index, or the argument after a keyword) and how the keys are laid
// out from there (a range, or a count argument followed by the keys).
// Indexes count the command name as 0.
type KeySpec struct {
	Flags KeyFlags

	Begin     int    // begin_search index
	Keyword   string // begin_search keyword, when not empty
	StartFrom int    // where the keyword search starts; negative: from the end, backwards

	LastKey, KeyStep, Limit int  // find_keys range
	KeyNum                  bool // find_keys keynum instead of range
	KeyNumIdx, FirstKey     int  // find_keys keynum

	Unknown bool // a spec type this package cannot interpret
}

// Lookup returns the spec of the command in args (args[0] is its name;
// for a container command args[1] names the subcommand), or nil when the
// command is not in the table (a module's command, or a newer server's).
func Lookup(args []any) *Spec {
	if len(args) == 0 {
		return nil
	}
	name := strings.ToLower(Arg(args, 0))
	if containers[name] {
		if len(args) < 2 {
			return table[name]
		}
		if s := table[name+"|"+strings.ToLower(Arg(args, 1))]; s != nil {
			return s
		}
	}
	return table[name]
}

// Writes reports whether the command may modify a key: a write command,
// or one whose key specs read-write, overwrite or remove (EVAL and FCALL
// are not write commands but their keys are RW).
func (s *Spec) Writes() bool {
	if s.Flags&Write != 0 {
		return true
	}
	for _, k := range s.Keys {
		if k.Flags&(KeyRW|KeyOW|KeyRM) != 0 {
			return true
		}
	}
	return false
}

// Complete reports whether the key specs find every key the command may
// touch. SORT's BY and GET patterns, for instance, are not found.
func (s *Spec) Complete() bool {
	for _, k := range s.Keys {
		if k.Flags&KeyIncomplete != 0 || k.Unknown {
			return false
		}
	}
	return true
}

// AppendKeys appends to dst the indexes in args of the command's keys, in
// the order the server finds them (duplicates possible), and returns the
// extended slice. ok is false when an argument the search needs is
// malformed (a key count that is not a number); the server will refuse
// such a command anyway. Arguments beyond the last are ignored, as the
// server does for commands of variable arity.
func (s *Spec) AppendKeys(dst []int, args []any) (_ []int, ok bool) {
	argc := len(args)
	for _, ks := range s.Keys {
		if ks.Unknown {
			continue // Complete reports it
		}
		first := ks.Begin
		if ks.Keyword != "" {
			first = keywordSearch(args, ks.Keyword, ks.StartFrom)
			if first == 0 {
				continue // keyword absent: no keys from this spec
			}
		}
		if first <= 0 || first >= argc {
			continue
		}
		var last, step int
		if ks.KeyNum {
			step = ks.KeyStep
			if first+ks.KeyNumIdx >= argc {
				return dst, false
			}
			n, err := strconv.Atoi(Arg(args, first+ks.KeyNumIdx))
			if err != nil || n < 0 {
				return dst, false
			}
			first += ks.FirstKey
			last = first + n - 1
		} else {
			step = ks.KeyStep
			switch {
			case ks.LastKey >= 0:
				last = first + ks.LastKey
			case ks.Limit == 0:
				last = argc + ks.LastKey
			default:
				last = first + (argc-first)/ks.Limit + ks.LastKey
			}
		}
		if step <= 0 {
			step = 1
		}
		for j := first; j <= last; j += step {
			if j >= argc {
				break
			}
			dst = append(dst, j)
		}
	}
	return dst, true
}

// keywordSearch returns the index after the first argument equal to kw
// (case-insensitive), searching from start forwards, or from argc+start
// backwards when start is negative; 0 when absent.
func keywordSearch(args []any, kw string, start int) int {
	argc := len(args)
	if start > 0 {
		for i := start; i < argc; i++ {
			if strings.EqualFold(Arg(args, i), kw) {
				return i + 1
			}
		}
		return 0
	}
	for i := argc + start; i >= 1; i-- {
		if i < argc && strings.EqualFold(Arg(args, i), kw) {
			return i + 1
		}
	}
	return 0
}

// Arg returns args[i] as the text the server receives (resp.ArgText):
// strings and byte slices as they are, numbers and bools as AppendArg
// writes them; "" for an index out of range or a type the encoder refuses.
func Arg(args []any, i int) string {
	if i < 0 || i >= len(args) {
		return ""
	}
	s, _ := resp.ArgText(args[i])
	return s
}

// Keys returns the keys of the command in args as strings, with its spec;
// spec is nil for an unknown command, and ok false when its keys cannot be
// told (unknown command, malformed key count, incomplete key specs).
func Keys(args []any) (keys []string, spec *Spec, ok bool) {
	spec = Lookup(args)
	if spec == nil {
		return nil, nil, false
	}
	var buf [8]int
	pos, ok := spec.AppendKeys(buf[:0], args)
	keys = make([]string, len(pos))
	for i, p := range pos {
		keys[i] = Arg(args, p)
	}
	return keys, spec, ok && spec.Complete()
}

// ReplicaRead reports whether args may be sent to a replica when reads
// go to replicas (ReadFrom): a command the table flags read-only, but no
// blocking command and none of the SCAN family, whose cursor is one
// server's.
func ReplicaRead(args []any) bool {
	s := Lookup(args)
	if s == nil || s.Flags&ReadOnly == 0 || s.Flags&Blocking != 0 {
		return false
	}
	switch s.Name {
	case "scan", "sscan", "hscan", "zscan":
		return false
	}
	return true
}
