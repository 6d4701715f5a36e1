package benchmarks

// Internals opened to the black-box tests of package benchmarks_test.
var (
	RatioInterval = ratioInterval
	AdjustBH      = adjustBH
	WorkloadDefs  = workloadDefs
)

// NextLook is Plan.nextLook of p with its defaults: the verdict of one
// workload and level, and the targets to sample again.
func NextLook(p Plan, cells []Cell) (Recommendation, []string) {
	return p.withDefaults().nextLook(cells)
}

// RecommendPlan is the verdicts Run gives cells measured under p.
func RecommendPlan(p Plan, cells []Cell) []Recommendation {
	return recommend(cells, p.withDefaults().rule())
}

// Looks is the most looks of p; LookSamples the samples of a
// contender at look k.
func Looks(p Plan) int              { return p.withDefaults().looks() }
func LookSamples(p Plan, k int) int { return p.withDefaults().lookSamples(k) }
func RankP(a, b []float64) float64  { return compare(a, b, 0.05) }
