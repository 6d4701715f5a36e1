package verdict

import "time"

// Report is the outcome of one run of the harness: where it ran, every
// cell it measured, and what it concluded. It is written as report.json
// (these field names are a contract: programs outside this module read
// them), report.csv, report.md and report.html.
type Report struct {
	// Version of the report format; bumped when a field changes meaning.
	Version  int       `json:"version"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Command is the command line that produced the report, without
	// credentials.
	Command string `json:"command"`
	// Partial is set when the run was interrupted (Ctrl-C, a fatal error):
	// the cells measured so far are reported, the rest are missing.
	Partial  bool     `json:"partial"`
	Machine  Machine  `json:"machine"`
	Settings Settings `json:"settings"`

	// Answer is the one configuration for the user's workload at the
	// user's concurrency (benchmarks.Plan.At); nil when that cell has no
	// verdict.
	Answer *Answer `json:"answer,omitempty"`
	// Workloads says what each workload run was.
	Workloads []WorkloadInfo `json:"workloads,omitempty"`

	Cells           []Cell           `json:"cells"`
	Recommendations []Recommendation `json:"recommendations"`
	Crossovers      []Crossover      `json:"crossovers"`
	// SLO holds, per workload and target, the highest open-loop rate
	// sustained under the SLO bound (SLO mode only).
	SLO []SLOResult `json:"slo,omitempty"`
	// Baseline compares this run with an earlier report, cell by cell
	// (-baseline only).
	Baseline *BaselineComparison `json:"baseline,omitempty"`
	// Skipped says which workloads did not run, and why ("mget skipped:
	// it needs a cluster").
	Skipped []string `json:"skipped,omitempty"`
	// Warnings are what a reader must know before trusting the verdicts:
	// a plan too small to ever be significant, an open loop whose client
	// sent late by more than a tenth of the SLO bound, and the like.
	Warnings []string `json:"warnings,omitempty"`
}

// ReportVersion is the Version written by this package. Version 2
// renamed cells' qps_low/qps_high to qps_lo/qps_hi and the baseline's
// deltas to cells; version 3 replaced the confidence "tie" by
// "equivalent" and "undecided", and an undecided verdict names no
// strategy.
const ReportVersion = 3

// Machine is where the run happened.
type Machine struct {
	GOMAXPROCS   int    `json:"gomaxprocs"`
	CPUs         int    `json:"cpus"`
	GoVersion    string `json:"go_version"`
	OS           string `json:"os"`
	Arch         string `json:"arch"`
	RedisVersion string `json:"redis_version"`
	// CPUModel is the client machine's processor ("model name" of
	// /proc/cpuinfo; empty where unknown).
	CPUModel string `json:"cpu_model,omitempty"`
	// Embedded is set when the harness started its own redis-server
	// processes; Pinned when they ran on a CPU of their own (taskset), and
	// PinNote says which CPUs or why not.
	Embedded bool   `json:"embedded"`
	Pinned   bool   `json:"pinned"`
	PinNote  string `json:"pin_note,omitempty"`
	// Standalone and Cluster are the addresses measured (seeds of the
	// cluster), never with credentials.
	Standalone string   `json:"standalone,omitempty"`
	Cluster    []string `json:"cluster,omitempty"`
	// Sentinel is "MASTER@sentinel,sentinel…" when the standalone server
	// was measured through Redis Sentinel (target.Servers.Sentinel):
	// Standalone is then the master they named at the start.
	Sentinel string `json:"sentinel,omitempty"`
	// TargetServers are, by target name, the servers of the targets that
	// measured servers of their own (a -target URL with a host) rather
	// than Standalone or Cluster.
	TargetServers map[string][]string `json:"target_servers,omitempty"`
}

// Settings are the knobs of the run.
type Settings struct {
	Levels    []int         `json:"levels"`
	Workloads []string      `json:"workloads"`
	Targets   []string      `json:"targets"`
	Duration  time.Duration `json:"duration_ns"` // of one sample
	Warmup    time.Duration `json:"warmup_ns"`   // discarded before each cell's samples
	Repeats   int           `json:"repeats"`     // samples per cell at the first look
	// MaxRepeats is the most samples per cell: the targets of a verdict
	// still undecided get more, Repeats at a time, up to it; Looks is the
	// most looks at the samples that makes, and LookAlpha the
	// significance level of each (Alpha/Looks).
	MaxRepeats int     `json:"max_repeats,omitempty"`
	Looks      int     `json:"looks,omitempty"`
	LookAlpha  float64 `json:"look_alpha,omitempty"`
	// Mode is "closed" (each worker sends its next request when the last
	// returns) or "open" (requests sent at Rate per second, latency
	// measured from each request's intended send time).
	Mode string  `json:"mode"`
	Rate float64 `json:"rate,omitempty"`
	// SLO is the latency bound of SLO mode, e.g. "p99=2ms"; empty otherwise.
	SLO string `json:"slo,omitempty"`
	// Alpha is the significance level of the verdicts over all their
	// looks, Margin the least relative difference that counts as a win
	// and the most that counts as equivalent (0.05: 5%).
	Alpha  float64 `json:"alpha"`
	Margin float64 `json:"margin"`
	Seed   int64   `json:"seed"` // of the shuffles of target order
}

// WorkloadInfo says what a workload of the report was: its name and
// description and, for the custom workload, each of its parts in the form
// of its redisx-bench flag (so that a program can run it again).
type WorkloadInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Mix         string `json:"mix,omitempty"`
	Keys        int    `json:"keys,omitempty"`
	KeyDist     string `json:"key_dist,omitempty"`
	Value       string `json:"value,omitempty"`
	Batch       int    `json:"batch,omitempty"`
	TTL         string `json:"ttl,omitempty"` // a Go duration; "0s": no expiry
	// Source says where the custom workload's description came from:
	// "flags" or "profile" (read from a server).
	Source string `json:"source,omitempty"`
}

// Cell is one workload × target × concurrency level, measured Samples
// times.
type Cell struct {
	// Workload names the workload and its variant, "family/variant" when
	// the family has several ("get", "values/set-32KiB", "near/w10").
	Workload    string `json:"workload"`
	Target      string `json:"target"`
	Concurrency int    `json:"concurrency"`
	// Peer is set for a client that is not redisx (rueidis, redigo,
	// go-redis): measured for comparison, never recommended.
	Peer bool `json:"peer"`
	// Stale is set for a target whose reads may be stale up to a TTL (see
	// Target.Stale): a tie never goes to it over a coherent target.
	Stale bool `json:"stale,omitempty"`

	// QPS is the median of the samples' throughputs (operations per
	// second); QPSLow and QPSHigh its 95% confidence interval (with
	// fewer than 6 samples, their range). QPSSamples are the samples
	// themselves, in the order measured: the verdicts and a later
	// baseline comparison test them.
	QPS        float64   `json:"qps"`
	QPSLow     float64   `json:"qps_lo"`
	QPSHigh    float64   `json:"qps_hi"`
	Samples    int       `json:"samples"`
	QPSSamples []float64 `json:"qps_samples"`

	// Latency percentiles over every operation of every sample, merged
	// from per-worker HDR histograms, in milliseconds.
	P50ms  float64 `json:"p50_ms"`
	P90ms  float64 `json:"p90_ms"`
	P99ms  float64 `json:"p99_ms"`
	P999ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`

	Ops    int64 `json:"ops"`
	Errors int64 `json:"errors"`
	// FirstError is the first error's text; a cell with errors is failed
	// and never wins.
	FirstError string `json:"first_error,omitempty"`
	Failed     bool   `json:"failed"`

	// Conns is the most client connections of the target the server(s)
	// held after any of the cell's samples (CLIENT LIST by client name,
	// summed over a cluster's masters, counted once the sample's clock
	// has stopped, so that counting costs the sample nothing).
	Conns int `json:"conns"`
	// MaxConns is the most connections the target may open per server
	// (a pool's size, a multiplexer's connections; 0: not fixed): ties
	// between equal Conns are broken toward the lower bound.
	MaxConns int `json:"max_conns,omitempty"`
	// Lanes is the most shared connections a Multiplexed target had
	// open at the end of any of the cell's samples (its Stats.Lanes,
	// summed over a cluster's nodes); 0 for other targets.
	Lanes int `json:"lanes,omitempty"`
	// CPUPerOp is the client process's CPU time per operation, in
	// microseconds; AllocsPerOp and BytesPerOp its heap allocations.
	CPUPerOp    float64 `json:"cpu_us_per_op"`
	AllocsPerOp float64 `json:"allocs_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`

	// HitRatio is the near-cache hit ratio (near workloads only).
	HitRatio float64 `json:"hit_ratio,omitempty"`
	// InvalidationsPerWrite is how many keys the near-cache's
	// invalidation messages named per write of the workload
	// (Stats.InvalidationsReceived over the ops that write, see
	// workload.Workload.Writes): what its tracking mode costs the server
	// and the process. Near-cache targets on workloads that write only.
	InvalidationsPerWrite float64 `json:"invalidations_per_write,omitempty"`
	// LocalBytes is the most a near-cache target held at the end of any
	// of the cell's samples (Stats.LocalBytes).
	LocalBytes int64 `json:"local_bytes,omitempty"`
	// Rate is the offered rate of an open-loop cell, per second, and
	// Unsent the requests still unsent when a sample's drain period (one
	// more duration) ended: the target did not sustain the rate. They are
	// recorded as latencies (their wait so far), not as errors.
	Rate   float64 `json:"rate,omitempty"`
	Unsent int64   `json:"unsent,omitempty"`
	// P99Samples are the samples' own p99 latencies, in milliseconds:
	// what the verdict compares in open loop, where every target is
	// offered the same rate.
	P99Samples []float64 `json:"p99_samples_ms,omitempty"`
	// LatenessP99ms is the p99 of the client's own lateness in sending
	// (open loop only): how long after a request could have gone — its
	// intended time, or when a worker became free — it went. Latencies
	// include it; when it nears the latencies, the client measured
	// itself.
	LatenessP99ms float64 `json:"lateness_p99_ms,omitempty"`
}

// Recommendation is the verdict for one workload at one concurrency level
// (see Recommend for the rule).
type Recommendation struct {
	Workload    string `json:"workload"`
	Concurrency int    `json:"concurrency"`
	// Strategy is the target named: the winner, or the one the tie-break
	// chose among equivalent targets; empty when the verdict is
	// undecided (no target is named) or every cell failed.
	Strategy string `json:"strategy"`
	// Confidence is Significant (Strategy beats every other target with
	// p < the look's alpha and the lower end of the interval of the ratio
	// at least 1 + Settings.Margin), Equivalent (no win, and the targets
	// not beaten so are equivalent to the leader within the margin: the
	// tie-break named one, and TieBreak says how) or Undecided (neither,
	// after every look: see Contenders).
	Confidence string `json:"confidence"`
	// Margin is the named target's median QPS over the runner-up's, less
	// 1 (0.23: 23% faster; in open loop, the runner-up's median p99 over
	// the named target's, less 1), or the leader's over the first other
	// contender when undecided; MarginLo and MarginHi the interval of
	// that ratio, less 1, at level IntervalLevel (0.95 at alpha 0.05 and
	// one look; for an equivalent verdict the interval of the two
	// one-sided tests, 0.90 then).
	Margin        float64 `json:"margin"`
	MarginLo      float64 `json:"margin_lo"`
	MarginHi      float64 `json:"margin_hi"`
	IntervalLevel float64 `json:"interval_level,omitempty"`
	PValue        float64 `json:"p_value"`
	RunnerUp      string  `json:"runner_up"`
	TieBreak      string  `json:"tie_break,omitempty"`
	// Underpowered marks an undecided verdict whose interval is wider
	// than Settings.Margin: the samples could not have told a
	// margin-sized difference from none. More samples narrow it.
	Underpowered bool `json:"underpowered,omitempty"`
	// Contenders are, for an undecided verdict, the targets the samples
	// could not tell apart within the margin: the leader first, then
	// every target it neither beats by the margin nor is equivalent to.
	Contenders []string `json:"contenders,omitempty"`
	// SuggestedMaxRepeats is, for an undecided verdict, about how many
	// samples per target would decide it (-max-repeats) if the estimates
	// stayed where they are; 0 when no reasonable number would (the
	// difference lies on the margin itself).
	SuggestedMaxRepeats int `json:"suggested_max_repeats,omitempty"`
	// Alternative, when set, offers a target with fewer connections than
	// Strategy that is significantly slower, with what it costs:
	// "multiplexed-4 is +5.3% faster [+2.4%, +8.3%] with 4 connections;
	// multiplexed-1 uses 1 connection". It is never the recommendation.
	Alternative string `json:"alternative,omitempty"`
	// Samples is the fewest samples of the targets compared (of the
	// contenders, when undecided); Looks the times the sequential
	// sampling looked at them (see Sampling; 0 when not recorded).
	Samples int `json:"samples,omitempty"`
	Looks   int `json:"looks,omitempty"`
	// URL configures the named target through redisx.ParseURL; Go is the
	// same as a Go snippet. Empty for a peer (a client that is not redisx)
	// and when no target is named.
	URL string `json:"url"`
	Go  string `json:"go"`
	// Near, for a near-cache (localcache.Near), says what it costs and
	// risks beside its speed: its tracking mode, the memory it held and
	// may hold, and how stale another client's write can be served.
	Near string `json:"near,omitempty"`
	// Peer is the fastest peer measured at the same workload and level
	// (recommendations name redisx targets only), and PeerRatio the
	// recommended target's median QPS over that peer's (in open loop,
	// the peer's median p99 over the target's).
	Peer      string  `json:"peer,omitempty"`
	PeerRatio float64 `json:"peer_ratio,omitempty"`
}

// Confidence values of a Recommendation (and an Answer).
const (
	Significant = "significant"
	Equivalent  = "equivalent"
	Undecided   = "undecided"
)

// Crossover is where one target overtakes another as concurrency grows:
// From won significantly at level Below, To wins significantly at level
// Above, and no level between them has a significant winner (they are
// equivalent, undecided or not measured); the crossing lies between them.
type Crossover struct {
	Workload string `json:"workload"`
	From     string `json:"from"`
	To       string `json:"to"`
	// Between is [Below, Above].
	Between [2]int `json:"between"`
	Below   int    `json:"below"`
	Above   int    `json:"above"`
	// Confidence is always "significant": an equivalent or undecided
	// verdict never makes a crossover.
	Confidence string `json:"confidence"`
	// Text is the human sentence: "pool-32 overtakes multiplexed-1
	// between 4 and 10 goroutines".
	Text string `json:"text"`
}

// SLOResult is the outcome of one target's SLO search: the highest
// open-loop rate it held the SLO at, and the lowest it broke it at. The
// rate it can sustain lies between them; the report never claims more.
type SLOResult struct {
	Workload string  `json:"workload"`
	Target   string  `json:"target"`
	BoundMs  float64 `json:"bound_ms"` // the SLO's bound
	// Concurrency is the number of workers that offered the rate (at
	// most that many requests in flight).
	Concurrency int `json:"concurrency"`
	// MaxRate is the highest rate, per second, at which every probe held
	// the bound, below every rate a probe did not hold at; 0: not even
	// the lowest rate tried.
	MaxRate float64 `json:"max_rate"`
	// FirstFailingRate is the lowest rate a probe did not hold at: it
	// broke the bound, or could not show that it held (undecided); 0:
	// none up to the end of the ramp, so MaxRate is a lower bound.
	FirstFailingRate float64 `json:"first_failing_rate"`
	// Confirmed is set when MaxRate held in four probes (sloHolds): the
	// search's and re-runs after it.
	Confirmed bool `json:"confirmed"`
	// Latency is the SLO's percentile of the pooled operations of a
	// probe at MaxRate, the highest of its probes', in milliseconds.
	Latency float64 `json:"latency_ms"`
	// Headroom is MaxRate over the runner-up's, less 1 (winner only).
	Headroom float64 `json:"headroom"`
	Winner   bool    `json:"winner"`
	// Note says what else happened: a re-run that failed, a client too
	// late to measure the bound.
	Note   string     `json:"note,omitempty"`
	Probes []SLOProbe `json:"probes"`
}

// SLOProbe is one probe of an SLO search: open-loop samples (looks) at
// Rate, their latencies pooled, until a confidence interval for the
// SLO's percentile of the pooled operations lies within the bound
// (Outcome "holds", Passed), over it ("fails"), or the looks ran out
// ("undecided", not passed). A look with an error or with requests left
// unsent fails it.
type SLOProbe struct {
	Rate    float64 `json:"rate"`
	Passed  bool    `json:"passed"`
	Outcome string  `json:"outcome"` // holds, fails or undecided
	// Samples (looks) were run, Ops latencies pooled over them;
	// PercentileMs is the SLO's percentile of those, [LoMs, HiMs] its
	// interval (95% over the looks of the probe; HiMs 0: too few
	// operations to bound it above). WorstMs is the highest of the
	// looks' own percentiles, LatenessP99ms the p99 of the client's
	// send lateness over them.
	Samples       int     `json:"samples"`
	Ops           int64   `json:"ops"`
	PercentileMs  float64 `json:"percentile_ms"`
	LoMs          float64 `json:"percentile_lo_ms"`
	HiMs          float64 `json:"percentile_hi_ms"`
	WorstMs       float64 `json:"worst_ms"`
	LatenessP99ms float64 `json:"lateness_p99_ms"`
	Why           string  `json:"why,omitempty"` // why it did not hold
}

// BaselineComparison is a run compared with an earlier one.
type BaselineComparison struct {
	File    string `json:"file"`
	Started string `json:"started"` // of the baseline run
	// Compatible is set when the two runs measured like with like: the
	// same machine, loop, rates, sample durations, repeats and workload
	// definitions. Otherwise Mismatches says what differs, and a change
	// may be the difference's rather than the code's.
	Compatible bool     `json:"compatible"`
	Mismatches []string `json:"mismatches,omitempty"`
	// Cells are the cells measured in both runs (same workload, target
	// and level); empty when the runs have none in common.
	Cells []Delta `json:"cells"`
	// VerdictChanges lists the workload/levels whose recommended strategy
	// differs from the baseline's, as sentences; a verdict significant on
	// neither side (equivalent, undecided, or a version 2 report's tie)
	// is no change.
	VerdictChanges []string `json:"verdict_changes"`
}

// Delta is one cell's QPS change against the baseline, benchstat style.
type Delta struct {
	Workload    string `json:"workload"`
	Target      string `json:"target"`
	Concurrency int    `json:"concurrency"`
	// Peer marks a client that is not redisx: the control of the
	// comparison (see CompareBaseline).
	Peer   bool    `json:"peer,omitempty"`
	OldQPS float64 `json:"old_qps"`
	NewQPS float64 `json:"new_qps"`
	// Change is NewQPS/OldQPS - 1; ChangeLo and ChangeHi the 95%
	// interval of that ratio, less 1.
	Change   float64 `json:"change"`
	ChangeLo float64 `json:"change_lo"`
	ChangeHi float64 `json:"change_hi"`
	// PValue is the Mann–Whitney U p-value of the two cells' samples,
	// PAdjusted the same corrected for the number of cells compared
	// (Benjamini–Hochberg).
	PValue    float64 `json:"p_value"`
	PAdjusted float64 `json:"p_adjusted"`
	// Significant is set when PAdjusted < alpha and the interval of the
	// change lies beyond the margin on one side: ChangeLo ≥ margin, or
	// ChangeHi ≤ 1/(1+margin) - 1 (-4.8% for a 5% margin).
	Significant bool `json:"significant"`
}
