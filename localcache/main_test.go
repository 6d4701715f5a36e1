package localcache_test

import (
	"os"
	"testing"

	"github.com/redisx-go/kit/internal/launcher"
)

// sharedCluster is the cluster of the tests that only read and write
// keys of their own on one (see launcher.SharedCluster); a test that
// kills a node, moves a slot or configures one starts a cluster of its
// own.
var sharedCluster = launcher.NewSharedCluster(launcher.ClusterOptions{Replicas: 1})

func TestMain(m *testing.M) { os.Exit(sharedCluster.Run(m)) }
