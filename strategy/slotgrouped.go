package strategy

import (
	"context"
	"fmt"

	"github.com/redisx-go/kit/internal/cluster"
	"github.com/redisx-go/kit/internal/param"
)

// SlotGrouped runs multi-key calls the way the Codis proxy does: keys are
// grouped by slot, slots by node, and each node receives one pipelined
// round trip holding one MGET (MSET, DEL) per slot; all nodes are asked in
// parallel and the results come back in the caller's key order. A 50-key
// MGET over 50 slots on 3 masters costs 3 parallel round trips instead of
// 50 sequential ones.
//
// Single-key calls and Do go straight to the transport. On a standalone
// server, one node holding every slot, SlotGrouped still helps very large
// key lists: they are split into MaxBatch-key commands sent as one
// pipeline (Stats counts that one node).
//
// When a node fails, the keys it held are reported in a *NodeError per
// node (joined with errors.Join), and the values read from the other
// nodes are returned alongside; redisx.Client tries those keys again when
// the failure is Temporary, by its Retry policy. Keys redirected (MOVED,
// ASK) are sent again one slot at a time through the cluster's routing.
type SlotGrouped struct {
	// Transport carries the commands: Multiplexed or Pool. Zero:
	// Multiplexed{}.
	Transport Strategy
	// MaxBatch is the most keys in one command; longer slot groups are
	// split. Zero: 1000.
	MaxBatch int
}

// Open implements Strategy.
func (s SlotGrouped) Open(ctx context.Context, cfg Config) (Backend, error) {
	if err := s.Validate(cfg); err != nil {
		return nil, err
	}
	t, _ := transportOf(s.transport())
	if s.MaxBatch == 0 {
		s.MaxBatch = 1000
	}
	b, err := cluster.Open(ctx, cfg, t)
	if err != nil {
		return nil, err
	}
	g, err := cluster.NewGrouped(b, s.MaxBatch)
	if err != nil {
		b.Close()
		return nil, err
	}
	return grouped{running{g}, public(b)}, nil
}

// transport returns Transport, or its default.
func (s SlotGrouped) transport() Strategy {
	if s.Transport == nil {
		return Multiplexed{}
	}
	return s.Transport
}

// Validate implements Validator: Transport a valid Multiplexed or Pool,
// MaxBatch not negative, and cfg without Sentinel and with ReadPrimary.
func (s SlotGrouped) Validate(cfg Config) error {
	tr := s.transport()
	if _, ok := transportOf(tr); !ok {
		return fmt.Errorf("%w: SlotGrouped.Transport must be strategy.Multiplexed or strategy.Pool, not %T", ErrInvalidArgument, tr)
	}
	switch {
	case cfg.Sentinel != nil:
		return fmt.Errorf("%w: SlotGrouped does not support Sentinel (it groups keys by cluster node)", ErrInvalidArgument)
	case cfg.ReadFrom != ReadPrimary:
		return fmt.Errorf("%w: SlotGrouped reads from the master only: ReadFrom must be ReadPrimary", ErrInvalidArgument)
	case s.MaxBatch < 0:
		return fmt.Errorf("%w: SlotGrouped.MaxBatch %d is negative", ErrInvalidArgument, s.MaxBatch)
	}
	return Validate(tr, cfg)
}

// URLName implements URLStrategy: strategy=slotgrouped.
func (SlotGrouped) URLName() string { return "slotgrouped" }

// URLKeys implements URLStrategy.
func (SlotGrouped) URLKeys() []string { return []string{"transport", "max_batch"} }

// transports are the values SlotGrouped.Transport can take in a URL.
func transports() []URLStrategy { return []URLStrategy{Multiplexed{}, Pool{}} }

// FromURL implements URLStrategy: transport (multiplexed, the default,
// or pool) is Transport, configured by that strategy's parameters;
// max_batch is MaxBatch.
func (SlotGrouped) FromURL(p *URLParams) (Strategy, error) {
	name, err := p.String("transport")
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = Multiplexed{}.URLName()
	}
	var s SlotGrouped
	for _, t := range transports() {
		if t.URLName() != name {
			continue
		}
		if s.Transport, err = t.FromURL(p); err != nil {
			return nil, err
		}
	}
	if s.Transport == nil {
		return nil, fmt.Errorf("%w: transport=%q in URL, want multiplexed or pool", ErrInvalidArgument, name)
	}
	for _, t := range transports() {
		if err := p.Refuse(t.URLKeys(), "transport="+t.URLName(), name); err != nil {
			return nil, err
		}
	}
	if err := p.Count("max_batch", &s.MaxBatch); err != nil {
		return nil, err
	}
	return s, nil
}

// ToURL implements URLStrategy: transport first, its parameters, then
// max_batch. A nil Transport is written as multiplexed.
func (s SlotGrouped) ToURL(p *URLParams) error {
	var t URLStrategy = Multiplexed{}
	if s.Transport != nil {
		if err := param.NilValue(s.Transport); err != nil {
			return err
		}
		var ok bool
		if t, ok = param.Kind(s.Transport, transports()); !ok {
			return fmt.Errorf("%w: SlotGrouped.Transport %T cannot be written as a URL", ErrInvalidArgument, s.Transport)
		}
	}
	p.Add("transport", t.URLName())
	if err := t.ToURL(p); err != nil {
		return err
	}
	return p.AddCount("max_batch", s.MaxBatch)
}
