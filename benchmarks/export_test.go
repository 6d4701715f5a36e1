package benchmarks

// Internals opened to the black-box tests of package benchmarks_test.
var (
	RatioInterval = ratioInterval
	AdjustBH      = adjustBH
	WorkloadDefs  = workloadDefs
)
