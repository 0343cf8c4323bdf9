package squelch

import (
	"os"
	"testing"
)

// specialise parses a protobuf it did not write: arbitrary bytes must give an error, never a panic.
func FuzzSpecialise(f *testing.F) {
	if raw, err := os.ReadFile(os.Getenv("VOICED_SILERO_MODEL")); err == nil {
		f.Add(raw[:min(len(raw), 4096)])
	}
	f.Add([]byte{})
	f.Add([]byte{0x3a, 0x05, 0x5a, 0x03, 0x0a, 0x01, 's'})
	f.Add([]byte{0x3a, 0x06, 0x5a, 0x04, 0x0a, 0x02, 's', 'r'})
	f.Fuzz(func(t *testing.T, model []byte) {
		out, err := specialise(model)
		if err == nil && len(out) == 0 {
			t.Fatal("no error and no model")
		}
	})
}

func TestSpecialiseRefusesWhatItCannotRewrite(t *testing.T) {
	for name, model := range map[string][]byte{
		"empty":          {},
		"truncated":      {0x3a, 0x7f, 0x01},
		"graph, no sr":   {0x3a, 0x07, 0x5a, 0x05, 0x0a, 0x03, 'a', 'b', 'c'},
		"not a protobuf": []byte("not an onnx model"),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := specialise(model); err == nil {
				t.Fatal("specialised it")
			}
		})
	}
	out, err := specialise([]byte{0x3a, 0x06, 0x5a, 0x04, 0x0a, 0x02, 's', 'r'})
	if err != nil || len(out) == 0 {
		t.Fatalf("a graph whose input is sr: %v", err)
	}
}
