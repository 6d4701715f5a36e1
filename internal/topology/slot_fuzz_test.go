package topology_test

import (
	"testing"

	"github.com/redisx-go/kit/internal/topology"
)

// specSlot is the key-to-slot mapping written from the Redis Cluster
// specification (https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/#hash-tags),
// independently of Slot: a bitwise CRC16-XMODEM, no table, and the hash-tag
// rule as the spec's pseudo-code states it — find the first '{'; if a '}'
// follows it with at least one byte between them, hash only those bytes.
func specSlot(key string) int {
	hashed := key
	for s := 0; s < len(key); s++ {
		if key[s] != '{' {
			continue
		}
		for e := s + 1; e < len(key); e++ {
			if key[e] == '}' {
				if e > s+1 {
					hashed = key[s+1 : e]
				}
				break
			}
		}
		break // only the first '{' counts
	}
	return int(bitwiseCRC16(hashed) % topology.Slots)
}

// bitwiseCRC16 is CRC16-XMODEM bit by bit: polynomial 0x1021, initial
// value 0, no reflection, no final xor.
func bitwiseCRC16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// TestSpecSlotVectors checks the reference itself against the
// specification's published values, so FuzzSlot compares Slot with
// something known to be right.
func TestSpecSlotVectors(t *testing.T) {
	// "The CRC16 of 123456789 is 0x31C3" (cluster spec, appendix A).
	if got := bitwiseCRC16("123456789"); got != 0x31C3 {
		t.Fatalf("bitwiseCRC16(%q) = %#04x, want 0x31c3", "123456789", got)
	}
	for _, tt := range []struct {
		key  string
		same string // a key that must hash like key
	}{
		{"{user1000}.following", "user1000"},
		{"{user1000}.followers", "user1000"},
		{"foo{}{bar}", "foo{}{bar}"}, // empty first tag: the whole key
		{"foo{{bar}}zap", "{bar"},
		{"foo{bar}{zap}", "bar"},
		{"{", "{"},
		{"}{a}", "a"},
	} {
		if got, want := specSlot(tt.key), int(bitwiseCRC16(tt.same)%topology.Slots); got != want {
			t.Errorf("specSlot(%q) = %d, want %d (the slot of %q)", tt.key, got, want, tt.same)
		}
	}
}

// FuzzSlot checks Slot against the specification's reference on arbitrary
// bytes, hash tags included.
func FuzzSlot(f *testing.F) {
	// More seeds are in testdata/fuzz/FuzzSlot.
	f.Add("123456789")
	f.Fuzz(func(t *testing.T, key string) {
		got, want := topology.Slot(key), specSlot(key)
		if got != want {
			t.Fatalf("Slot(%q) = %d, want %d", key, got, want)
		}
		if got < 0 || got >= topology.Slots {
			t.Fatalf("Slot(%q) = %d, outside 0..%d", key, got, topology.Slots-1)
		}
	})
}
