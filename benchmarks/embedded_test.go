package benchmarks_test

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/benchmarks"
	"golang.org/x/sys/unix"
)

// TestKeepClientOffMovesEveryThread runs in a child process, since it
// changes the CPUs of the process it runs in: after KeepClientOff, no
// thread of the client may run on the servers' CPU, GOMAXPROCS counts
// the CPUs left, and an open-loop plan on 2 CPUs is left where it is.
func TestKeepClientOffMovesEveryThread(t *testing.T) {
	if os.Getenv("REDISX_BENCH_AFFINITY_CHILD") == "1" {
		keepClientOffChild(t)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("CPU affinity is set on Linux only")
	}
	if err := benchmarks.EmbeddedAvailable(); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKeepClientOffMovesEveryThread$", "-test.v")
	cmd.Env = append(os.Environ(), "REDISX_BENCH_AFFINITY_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}

func keepClientOffChild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	emb, err := benchmarks.StartEmbedded(ctx, true, false, true)
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Stop()
	if !emb.Pinned {
		t.Skipf("servers not pinned: %s", emb.PinNote)
	}
	last := runtime.NumCPU() - 1
	procs := runtime.GOMAXPROCS(0)

	if last < 2 {
		open := *emb
		if open.KeepClientOff(&benchmarks.Plan{Rate: 1000}) {
			t.Fatalf("an open loop on %d CPUs was moved off CPU %d: %s", last+1, last, open.PinNote)
		}
		if !strings.Contains(open.PinNote, "open loop") || runtime.GOMAXPROCS(0) != procs {
			t.Fatalf("open loop: note %q, GOMAXPROCS %d (was %d); want it unmoved and why", open.PinNote, runtime.GOMAXPROCS(0), procs)
		}
	}

	// Threads that exist before the move, busy or parked.
	done := make(chan struct{})
	for range 4 {
		go func() {
			runtime.LockOSThread()
			<-done
		}()
	}
	defer close(done)
	if !emb.KeepClientOff(&benchmarks.Plan{}) {
		t.Fatalf("KeepClientOff = false: %s", emb.PinNote)
	}
	t.Log(emb.PinNote)
	if want := min(procs, last); runtime.GOMAXPROCS(0) != want {
		t.Errorf("GOMAXPROCS = %d; want %d", runtime.GOMAXPROCS(0), want)
	}
	// A thread started after the move inherits it.
	started := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		close(started)
		<-done
	}()
	<-started
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err != nil {
			continue
		}
		if set.IsSet(last) || set.Count() == 0 {
			t.Errorf("thread %d may run on CPU %d, the servers' (%d CPUs in its mask)", tid, last, set.Count())
		}
	}
}
