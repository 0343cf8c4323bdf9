package speechcore

import (
	"encoding/json"
	"os"
	"sort"
	"testing"
)

// The shape of /v1/speech/health in reference/000, with vad beside transcription and synthesis.
var referenceHealthKeys = map[string][]string{
	"":              {"warm", "device", "executionProvider", "latencyBarMs", "assets", "transcription", "synthesis", "vad", "sessions", "processResidentBytes", "vramBudgetBytes", "vramInUseBytes", "overVramBudget"},
	"assets":        {"mount", "version", "manifest", "filesProved"},
	"transcription": {"modelId", "source", "license", "runtime", "weightsDigest", "tokenizerDigest", "configDigest", "melFiltersDigest", "sampleRate", "encoding", "partialCadenceMs", "segmentMaxMs", "loadMs", "warmupMs", "residentDeltaBytes", "queueDepth"},
	"synthesis":     {"modelId", "source", "license", "runtime", "modelDigest", "voiceDigest", "voice", "sampleRate", "encoding", "loadMs", "warmupMs", "residentDeltaBytes", "queueDepth"},
	"vad":           {"modelId", "runtime", "modelDigest", "sampleRate", "loadMs", "warmupMs", "residentDeltaBytes"},
	"sessions":      {"open", "cap"},
}

func TestSpeechHealthShape(t *testing.T) {
	svc, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(svc.Health())
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatal(err)
	}
	for section, keys := range referenceHealthKeys {
		obj := body
		if section != "" {
			obj, _ = body[section].(map[string]any)
		}
		for _, k := range keys {
			if _, ok := obj[k]; !ok {
				t.Errorf("%s lacks %q (has %v)", section, k, sortedKeys(obj))
			}
		}
	}
	// Nothing is loaded or measured: the figures say so rather than invent.
	if body["warm"] != false || body["device"] != nil || body["vramInUseBytes"] != nil {
		t.Errorf("unstarted service reports warm %v device %v vram %v", body["warm"], body["device"], body["vramInUseBytes"])
	}
	if tr := body["transcription"].(map[string]any); tr["loadMs"] != 0.0 || tr["weightsDigest"] != nil || tr["loaded"] != false {
		t.Errorf("transcription before load: %v", tr)
	}
	if body["latencyBarMs"] != 300.0 {
		t.Errorf("latencyBarMs %v", body["latencyBarMs"])
	}
}

func sortedKeys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func TestParseVmRSS(t *testing.T) {
	tests := []struct {
		name   string
		status string
		want   int64
		ok     bool
	}{
		{"kernel format", "Name:\tvoiced\nVmPeak:\t  99 kB\nVmRSS:\t   31520 kB\nRssAnon:\t 1 kB\n", 31520 * 1024, true},
		{"no VmRSS (kernel thread)", "Name:\tkthreadd\n", 0, false},
		{"not kB", "VmRSS:\t 12 MB\n", 0, false},
		{"not a number", "VmRSS:\t many kB\n", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseVmRSS([]byte(tc.status))
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("parseVmRSS = %d, %v; want %d ok=%v", got, err, tc.want, tc.ok)
			}
		})
	}
}

func TestResidentDelta(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	var keep []byte
	delta, err := ResidentDelta(func() error {
		keep = make([]byte, 64<<20)
		for i := range keep { // touch every page so it is resident
			keep[i] = 1
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if delta < 32<<20 {
		t.Errorf("resident delta %d after touching 64 MiB", delta)
	}
	_ = keep[len(keep)-1]
}

func FuzzParseVmRSS(f *testing.F) {
	f.Add([]byte("VmRSS:\t 1 kB\n"))
	f.Add([]byte("VmRSS:"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := parseVmRSS(b); err == nil && n < 0 {
			t.Fatalf("negative resident set %d", n)
		}
	})
}
