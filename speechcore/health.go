package speechcore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/voiced/voiced/speechcore/assets"
)

// Summary is the speech section of /health: the same facts as /v1/speech/health, in short.
type Summary struct {
	Built         bool    `json:"built"`         // this binary carries the models' runtimes
	Mounted       bool    `json:"mounted"`       // a verified artifact is mounted
	AssetsVersion *string `json:"assetsVersion"` // the manifest's version line, verbatim; null when not mounted
	Warm          bool    `json:"warm"`
}

// Summary reports the speech section of /health.
func (s *Service) Summary() Summary {
	sum := Summary{Built: true, Mounted: s.Mount != nil, Warm: s.Warm()}
	if s.Mount != nil {
		v := s.Mount.Version
		sum.AssetsVersion = &v
	}
	return sum
}

// Health is /v1/speech/health, in the shape of reference/000 with vad beside transcription and
// synthesis. Figures this process has not measured are zero or null, never invented.
type Health struct {
	Warm                 bool           `json:"warm"`
	Device               *string        `json:"device"`
	ExecutionProvider    *string        `json:"executionProvider"`
	LatencyBarMs         int            `json:"latencyBarMs"`
	Assets               AssetsHealth   `json:"assets"`
	Transcription        ModelHealth    `json:"transcription"`
	Synthesis            ModelHealth    `json:"synthesis"`
	VAD                  ModelHealth    `json:"vad"`
	Sessions             SessionsHealth `json:"sessions"`
	ProcessResidentBytes int64          `json:"processResidentBytes"`
	VRAMBudgetBytes      *int64         `json:"vramBudgetBytes"` // not measured yet: null
	VRAMInUseBytes       *int64         `json:"vramInUseBytes"`  // not measured yet: null
	OverVRAMBudget       bool           `json:"overVramBudget"`
}

// AssetsHealth describes the mount.
type AssetsHealth struct {
	Mount       *string `json:"mount"`
	Version     *string `json:"version"`
	Manifest    string  `json:"manifest"`
	FilesProved int     `json:"filesProved"`
}

// SessionsHealth is the speech doors' session gate (the doors fill it: speechdoor).
type SessionsHealth struct {
	Open int `json:"open"`
	Cap  int `json:"cap"`
}

// ModelHealth is one model's section. The digests are the ones Open measured and compared with
// the manifest; the timings are this process's own.
type ModelHealth struct {
	ModelID            string             `json:"modelId"`
	Source             *string            `json:"source"`  // not recorded in the mount: null
	License            *string            `json:"license"` // not recorded in the mount: null
	Runtime            string             `json:"runtime"`
	Loaded             bool               `json:"loaded"`
	Digests            map[string]*string `json:"-"` // flattened into the object by MarshalJSON
	SampleRate         int                `json:"sampleRate"`
	Encoding           string             `json:"encoding,omitempty"`
	Voice              string             `json:"voice,omitempty"`
	PartialCadenceMs   int                `json:"partialCadenceMs,omitempty"`
	SegmentMaxMs       int                `json:"segmentMaxMs,omitempty"`
	LoadMs             float64            `json:"loadMs"`
	WarmupMs           float64            `json:"warmupMs"`
	ResidentDeltaBytes int64              `json:"residentDeltaBytes"`
	QueueDepth         int                `json:"queueDepth"`
	// Languages (languages.go): what the model hears or speaks; DefaultLanguage and
	// DetectsLanguage are transcription's.
	Languages       []LanguageHealth `json:"languages,omitempty"`
	DefaultLanguage string           `json:"defaultLanguage,omitempty"`
	DetectsLanguage bool             `json:"detectsLanguage,omitempty"`
}

// MarshalJSON writes the digests beside the other fields, as the reference shape has them.
func (m ModelHealth) MarshalJSON() ([]byte, error) {
	type plain ModelHealth
	b, err := json.Marshal(plain(m))
	if err != nil || len(m.Digests) == 0 {
		return b, err
	}
	d, err := json.Marshal(m.Digests)
	if err != nil {
		return nil, err
	}
	// Splice {"digests"...} into the object: b is {...}, d is {...}.
	out := make([]byte, 0, len(b)+len(d))
	out = append(out, b[:len(b)-1]...)
	out = append(out, ',')
	out = append(out, d[1:]...)
	return out, nil
}

// Health reports /v1/speech/health now, less Sessions: the gate is the doors' (speechdoor fills it).
func (s *Service) Health() Health {
	h := Health{
		Warm:         s.Warm(),
		LatencyBarMs: LatencyBarMs,
		Assets:       AssetsHealth{Manifest: assets.ManifestName},
	}
	if s.Env != nil {
		d, p := s.Env.Device(), s.Env.ExecutionProvider()
		h.Device, h.ExecutionProvider = &d, &p
	}
	if rss, err := ResidentBytes(); err == nil {
		h.ProcessResidentBytes = rss
	}
	digest := func(rel string) *string {
		if s.Mount == nil {
			return nil
		}
		if d := s.Mount.Digest(rel); d != "" {
			return &d
		}
		return nil
	}
	if s.Mount != nil {
		dir, v := s.Mount.Dir, s.Mount.Version
		h.Assets.Mount, h.Assets.Version = &dir, &v
		h.Assets.FilesProved = s.Mount.FilesProved()
	}
	h.Transcription = modelHealth(WhisperModelID, s.Transcription, map[string]*string{
		"weightsDigest":          digest(assets.WhisperDir + "/encoder_model.onnx"),
		"decoderDigest":          digest(assets.WhisperDir + "/decoder_model_merged.onnx"),
		"tokenizerDigest":        digest(assets.WhisperDir + "/tokenizer.json"),
		"configDigest":           digest(assets.WhisperDir + "/config.json"),
		"generationConfigDigest": digest(assets.WhisperDir + "/generation_config.json"),
		"melFiltersDigest":       nil, // computed in code (Slaney), not mounted
	})
	h.Transcription.SampleRate, h.Transcription.Encoding = 16000, "pcm16le"
	h.Transcription.PartialCadenceMs, h.Transcription.SegmentMaxMs = 1000, 30000
	h.Synthesis = modelHealth(KokoroModelID, s.Synthesis, map[string]*string{
		"modelDigest":  digest(assets.KokoroDir + "/model.onnx"),
		"configDigest": digest(assets.KokoroDir + "/config.json"),
		"voiceDigest":  digest(assets.VoicesDir + "/af_heart.bin"),
	})
	h.Synthesis.SampleRate, h.Synthesis.Encoding, h.Synthesis.Voice = 24000, "pcm16le", "af_heart"
	h.VAD = modelHealth("silero-vad", s.VAD, map[string]*string{
		"modelDigest": digest(assets.SileroModel),
	})
	h.VAD.SampleRate = 16000
	s.languagesHealth(&h)
	return h
}

func modelHealth(id string, st ModelStats, digests map[string]*string) ModelHealth {
	m := ModelHealth{
		ModelID: id, Runtime: "onnxruntime", Loaded: st.Loaded, Digests: digests,
		LoadMs: st.LoadMs, WarmupMs: st.WarmupMs, ResidentDeltaBytes: st.ResidentDeltaBytes,
	}
	if st.QueueDepth != nil {
		m.QueueDepth = st.QueueDepth()
	}
	return m
}

// ResidentBytes reads this process's resident set (VmRSS in /proc/self/status).
func ResidentBytes() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read resident set: %w", err)
	}
	return parseVmRSS(b)
}

func parseVmRSS(status []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("read resident set: unexpected line %q", line)
		}
		kb, err := strconv.ParseUint(f[0], 10, 42) // < 4 PiB: the bytes fit an int64
		if err != nil {
			return 0, fmt.Errorf("read resident set: %w", err)
		}
		return int64(kb) * 1024, nil
	}
	return 0, fmt.Errorf("read resident set: no VmRSS line")
}

// ResidentDelta runs load and reports how much VmRSS grew across it: the host-side figure a CPU
// deployment is sized by. Engines use it around their load for ModelStats.ResidentDeltaBytes.
func ResidentDelta(load func() error) (delta int64, err error) {
	before, err := ResidentBytes()
	if err != nil {
		return 0, err
	}
	if err := load(); err != nil {
		return 0, err
	}
	after, err := ResidentBytes()
	if err != nil {
		return 0, err
	}
	return after - before, nil
}
