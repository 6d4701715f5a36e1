package topology

import (
	"math/rand/v2"
	"testing"
)

// refCRC16 is the bitwise CRC16-XMODEM the table must agree with.
func refCRC16(s string) uint16 {
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

func TestCRCTable(t *testing.T) {
	if len(crcTable) != 512 {
		t.Fatalf("len(crcTable) = %d, want 512", len(crcTable))
	}
	for i := range 256 {
		want := refCRC16(string([]byte{byte(i)}))
		got := uint16(crcTable[2*i])<<8 | uint16(crcTable[2*i+1])
		if got != want {
			t.Errorf("crcTable[%d] = %#04x, want %#04x", i, got, want)
		}
	}
	if got := crc16("123456789"); got != 0x31c3 {
		t.Errorf(`crc16("123456789") = %#04x, want 0x31c3 (the XMODEM check value)`, got)
	}
}

func TestSlot(t *testing.T) {
	// Expected slots from CLUSTER KEYSLOT on redis-server 7.0.15.
	tests := []struct {
		key  string
		want int
	}{
		{"123456789", 12739},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", 8363}, // empty tag: the whole key
		{"foo{{bar}}zap", 4015},
		{"{bar", 4015}, // what "foo{{bar}}zap" hashes
		{"foo{bar}{zap}", 5061},
		{"bar", 5061}, // what "foo{bar}{zap}" hashes
		{"", 0},
		{"foo", 12182},
		{"{}", 15257},
		{"{", 4092},
		{"}", 12090},
		{"a{b", 13340},
		{"a}b{c}", 7365},
		{"{a}{b}", 15495},
		{"héllo", 11061},
		{"hello", 866},
		{"\x00\xff\x80\n", 13745},
		{"\xff{\x00\x01}\xfe", 4129},
		{"{\x00}", 0},
	}
	for _, tt := range tests {
		if got := Slot(tt.key); got != tt.want {
			t.Errorf("Slot(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
	if Slot("{user1000}.following") != Slot("{user1000}.followers") {
		t.Error("keys with the same hash tag got different slots")
	}
	if got, want := Slot("foo{}{bar}"), int(refCRC16("foo{}{bar}")%Slots); got != want {
		t.Errorf(`Slot("foo{}{bar}") = %d, want the whole key's %d`, got, want)
	}
	if got, want := Slot("foo{{bar}}zap"), int(refCRC16("{bar")%Slots); got != want {
		t.Errorf(`Slot("foo{{bar}}zap") = %d, want %d (hash of "{bar")`, got, want)
	}
}

func TestSlotRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		key := string(b)
		if got, want := Slot(key), int(refCRC16(key)%Slots); got != want && !hasTag(key) {
			t.Fatalf("Slot(%q) = %d, want %d", key, got, want)
		}
		if got := Slot(key); got < 0 || got >= Slots {
			t.Fatalf("Slot(%q) = %d out of range", key, got)
		}
		if Slot("{"+key+"}x") != Slot(key) && len(key) > 0 && !containsByte(key, '}') {
			t.Fatalf("Slot({%q}x) differs from Slot(%q)", key, key)
		}
	}
}

// hasTag reports whether key has a non-empty hash tag.
func hasTag(key string) bool {
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					return j > i+1
				}
			}
			return false
		}
	}
	return false
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

func TestSlotAllocs(t *testing.T) {
	keys := []string{"123456789", "{user1000}.following", "foo{}{bar}", "", "\x00\xff{\x01}"}
	var sink int
	allocs := testing.AllocsPerRun(1000, func() {
		for _, k := range keys {
			sink += Slot(k)
		}
	})
	if allocs != 0 {
		t.Errorf("Slot allocates %v times per run, want 0", allocs)
	}
	_ = sink
}

func BenchmarkSlot(b *testing.B) {
	keys := []string{"user:1000:profile", "{user1000}.following", "a-much-longer-key-name-used-by-some-service:42"}
	b.ReportAllocs()
	var sink int
	for i := 0; b.Loop(); i++ {
		sink += Slot(keys[i%len(keys)])
	}
	_ = sink
}
