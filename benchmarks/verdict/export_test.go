package verdict

// Internals opened to the black-box tests of package verdict_test.
var (
	AdjustBH     = adjustBH
	WorkloadDefs = workloadDefs
)
