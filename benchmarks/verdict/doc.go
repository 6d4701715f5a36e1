// Package verdict decides, from the samples of a run, which
// configuration to use, and how sure that is.
//
// It holds the record of a run ([Report], its [Cell]s and what was
// concluded from them) and the statistics over it: [Recommend] and the
// sequential looks of a [Sampling] give every workload and level a
// verdict — significant, equivalent or undecided, on the Hodges–Lehmann
// interval of the ratio of two targets' scores ([RatioInterval]);
// [FindCrossovers] finds where the winner changes; [CompareBaseline]
// compares a run with an earlier one; [AnswerOf] is the one answer;
// [MarkSLOWinners] ranks the results of an SLO search.
//
// It does no I/O: no network, no files, no clock, no printing. Every
// function is a function of its arguments, testable on synthetic samples.
package verdict
