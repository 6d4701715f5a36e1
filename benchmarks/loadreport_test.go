package benchmarks_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/redisx-go/kit/benchmarks"
)

func TestLoadReportRejectsANewerVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, []byte(`{"version": 3, "cells": [{"target": "pool-8"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := benchmarks.LoadReport(path); err != nil || len(r.Cells) != 1 || r.Cells[0].Target != "pool-8" {
		t.Errorf("LoadReport of a version 3 report: %+v, %v; want its cell", r, err)
	}
	if err := os.WriteFile(path, []byte(`{"version": 99}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := benchmarks.LoadReport(path); err == nil {
		t.Error("LoadReport of version 99 succeeded; want an error")
	}
	if err := os.WriteFile(path, []byte(`not json`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := benchmarks.LoadReport(path); err == nil {
		t.Error("LoadReport of garbage succeeded; want an error")
	}
}
