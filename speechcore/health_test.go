package speechcore

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore/runtime"
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

func TestGuardAndFallbackRoutes(t *testing.T) {
	lib := runtime.LibPathFromEnv()
	if lib == "" {
		t.Skip("VOICED_ORT_LIB is not set: run through make or eval \"$(make -s env)\"")
	}
	svc, err := New(Config{Runtime: runtime.Config{LibPath: lib}})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	mux := http.NewServeMux()
	svc.Register(mux)
	for _, pattern := range SpeechRoutes {
		method, path, _ := strings.Cut(pattern, " ")
		path = strings.ReplaceAll(path, "{id}", "abc")
		t.Run(pattern, func(t *testing.T) {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
			var f door.ErrorFrame
			json.Unmarshal(rec.Body.Bytes(), &f)
			if rec.Code != http.StatusServiceUnavailable || f.Name != "speech_assets_not_mounted" {
				t.Errorf("%s: %d %+v, want 503 speech_assets_not_mounted", pattern, rec.Code, f)
			}
		})
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/speech/health", nil))
	var f door.ErrorFrame
	json.Unmarshal(rec.Body.Bytes(), &f)
	if rec.Code != http.StatusServiceUnavailable || f.Name != "speech_assets_not_mounted" {
		t.Errorf("speech health with nothing mounted: %d %s, want 503 speech_assets_not_mounted", rec.Code, rec.Body.String())
	}
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
