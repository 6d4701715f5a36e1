package benchmarks

// Sequential sampling: a verdict still undecided after a cell's samples
// gets more of them, for its contenders only, in rounds of Plan.Repeats,
// up to Plan.MaxRepeats; each round ends with a look at every sample so
// far, and the first look that decides stops the sampling.
//
// Looking again at data that grow inflates the chance of a false
// decision: five looks at the 5% level each are wrong about 14% of the
// time, not 5% (Armitage, McPherson & Rowe, "Repeated significance tests
// on accumulating data", J. R. Statist. Soc. A 132, 1969). So each look
// tests at alpha divided by the number of looks planned — a Bonferroni
// split, by the union bound valid whatever the dependence between looks
// and whatever the samples' distribution. Pocock's group-sequential
// boundaries ("Group sequential methods in the design and analysis of
// clinical trials", Biometrika 64, 1977) spend a little more of alpha per
// look (0.0221 for three looks against 0.0167), but assume normal
// statistics with independent increments, which rank tests of six
// samples are not. With an even split, every look has the same level:
// the verdict of the final samples at that level is the verdict the
// sampling stopped at, so Recommend's rule, given the look's level,
// reproduces it.

// looks is the most looks of a plan whose cells take repeats samples at
// a time up to maxRepeats.
func looks(repeats, maxRepeats int) int {
	if repeats <= 0 || maxRepeats <= repeats {
		return 1
	}
	return 1 + (maxRepeats-repeats+repeats-1)/repeats
}

// looks is the most looks of p's verdicts.
func (p Plan) looks() int { return looks(p.Repeats, p.MaxRepeats) }

// rule is the verdict rule of p: Alpha split evenly over its looks.
func (p Plan) rule() rule {
	return rule{alpha: p.Alpha, look: p.Alpha / float64(p.looks()), margin: p.Margin, repeats: p.Repeats}
}

// nextLook returns the verdict of one workload and level (cells) under
// p's rule, and the targets that are to get more samples for the next
// look: the contenders of an undecided verdict, when more samples could
// plausibly decide it — its SuggestedMaxRepeats, projected from the
// samples so far, at most twice p.MaxRepeats (a projection from six
// samples is rough: their estimate of the ratio moves by about as much as
// their interval is wide). A verdict more samples are unlikely to decide
// stays undecided at once, which spends the time on the verdicts that can
// be decided: fewer decided, none decided worse (the looks' level does
// not depend on when the sampling stops).
func (p Plan) nextLook(cells []Cell) (Recommendation, []string) {
	cands, _ := candidates(cells)
	if len(cands) < 2 {
		return Recommendation{}, nil
	}
	rec := decide(cands, p.rule())
	if rec.Confidence != Undecided || rec.SuggestedMaxRepeats == 0 || rec.SuggestedMaxRepeats > futility*p.MaxRepeats {
		return rec, nil
	}
	return rec, rec.Contenders
}

// futility is how far beyond the budget a projection may reach and still
// get more samples (see nextLook). On synthetic twins of 5% spread, 2
// decides 21% of verdicts with 18 samples a target on average, against
// 13% with 15 at 1 and 29% with 22 at 4.
const futility = 2

// lookSamples is the samples per contender at look k (1-based) of p:
// Repeats more at each, the last look at MaxRepeats.
func (p Plan) lookSamples(k int) int {
	return min(k*p.Repeats, max(p.MaxRepeats, p.Repeats))
}
