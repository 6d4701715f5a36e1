package strategy

// URLStrategy is an optional interface implemented by the strategy values
// a redis:// URL can name (redisx.ParseURL and redisx.FormatURL):
// Multiplexed, Pool, SlotGrouped, and localcache.Near as a layer. Each
// reads and writes its own parameters, so that the facade knows none of
// them, as go-cloud's URL openers do — without a registry: the facade
// lists the values it offers.
type URLStrategy interface {
	Strategy
	// URLName names it in a URL: the value of strategy= ("multiplexed"),
	// or for a URLLayer, the parameter that adds it ("near").
	URLName() string
	// URLKeys are the parameters it reads, for the message of one found
	// in a URL that names another strategy.
	URLKeys() []string
	// FromURL returns the value p describes, reading each of its
	// parameters from p.
	FromURL(p *URLParams) (Strategy, error)
	// ToURL writes the value's parameters to p, in a fixed order.
	ToURL(p *URLParams) error
}

// URLLayer is a URLStrategy in front of another strategy, which a URL
// adds by the parameter of its URLName (near=<size> adds a
// localcache.Near over the URL's strategy).
type URLLayer interface {
	URLStrategy
	// URLInner is the strategy the value is in front of.
	URLInner() Strategy
	// WithURLInner returns the value in front of inner.
	WithURLInner(inner Strategy) Strategy
}
