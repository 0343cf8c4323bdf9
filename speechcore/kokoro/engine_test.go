package kokoro

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/voiced/voiced/sentence"
	"github.com/voiced/voiced/speechcore/assets"
	"github.com/voiced/voiced/speechcore/fixture"
	"github.com/voiced/voiced/speechcore/runtime"
)

// The process's one ONNX Runtime environment and the fixture mount, made by TestMain.
var (
	testEnv   *runtime.Env
	mountDir  string // the fixture mount's root
	modelDir  string // its models/kokoro-82m
	setupErr  error
	engineMu  sync.Mutex
	sharedEng *Engine
)

func TestMain(m *testing.M) {
	lib := runtime.LibPathFromEnv()
	if lib == "" {
		fmt.Fprintln(os.Stderr, "VOICED_ORT_LIB unset: run the tests through make (make test) or eval \"$(make -s env)\"")
		os.Exit(1)
	}
	env, err := runtime.Open(runtime.Config{LibPath: lib, IntraOpThreads: 1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testEnv = env
	tmp, err := os.MkdirTemp("", "kokoro-fixture-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mountDir = tmp
	modelDir = filepath.Join(tmp, assets.KokoroDir)
	setupErr = fixture.Write(tmp, fixture.Options{SileroModel: os.Getenv("VOICED_SILERO_MODEL")})
	code := m.Run()
	if sharedEng != nil {
		sharedEng.Close()
	}
	env.Close()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// engine returns the engine over the fixture mount, loaded once.
func engine(t testing.TB) *Engine {
	t.Helper()
	if setupErr != nil {
		t.Fatalf("fixture mount: %v", setupErr)
	}
	engineMu.Lock()
	defer engineMu.Unlock()
	if sharedEng == nil {
		e, err := Load(context.Background(), testEnv, modelDir, Options{})
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		sharedEng = e
	}
	return sharedEng
}

// decodeTones reads the fixture codec back: each 1920-sample segment is matched against every
// tone row; the best-correlated id wins. It fails on silence, so a wrong style row (which the
// fixture model answers with silence) cannot pass.
func decodeTones(t *testing.T, pcm []int16, gain float64) []int64 {
	t.Helper()
	if len(pcm)%fixture.PhonemeSamples != 0 {
		t.Fatalf("%d samples is not a whole number of %d-sample phonemes", len(pcm), fixture.PhonemeSamples)
	}
	var ids []int64
	for seg := 0; seg < len(pcm); seg += fixture.PhonemeSamples {
		x := pcm[seg : seg+fixture.PhonemeSamples]
		best, bestScore := -1, 0.0
		for k := 1; k < fixture.NumTokens; k++ {
			row := fixture.ToneRow(k)
			var dot, norm float64
			for i, r := range row {
				dot += float64(r) * float64(x[i]) / 32768
				norm += float64(r) * float64(r)
			}
			if norm == 0 {
				continue
			}
			if score := dot / norm; score > bestScore {
				best, bestScore = k, score
			}
		}
		if best < 0 || math.Abs(bestScore-gain) > 0.01 {
			t.Fatalf("segment %d: best id %d at gain %.3f, want gain %.2f (silence means a wrong style row)", seg/fixture.PhonemeSamples, best, bestScore, gain)
		}
		ids = append(ids, int64(best))
	}
	return ids
}

func TestSpeakRoundTripsThroughFixtureCodec(t *testing.T) {
	e := engine(t)
	tests := map[string]struct {
		text       string
		voice      string
		gain       float64
		splitChars int
		phonemes   []string
	}{
		"lexicon words, sentence by sentence": {
			text: "Hello world. The cat sat!", gain: 1.0,
			phonemes: []string{"həlˈO wˈɜɹld.", "ði kˈæt sˈæt!"},
		},
		"other voice is quieter": {
			text: "Hello world.", voice: "am_adam", gain: 0.9,
			phonemes: []string{"həlˈO wˈɜɹld."},
		},
		"first alone then batched": {
			text: "Hello. The cat sat. Hello world.", gain: 1.0, splitChars: 100,
			phonemes: []string{"həlˈO.", "ði kˈæt sˈæt. həlˈO wˈɜɹld."},
		},
		"espeak words and numbers": {
			text: "Read 2 books.", gain: 1.0,
			phonemes: []string{"ɹˈid tˈu bˈʊks."},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []Chunk
			err := e.Speak(context.Background(), Request{Text: tc.text, Voice: tc.voice, SplitChars: tc.splitChars}, func(c Chunk) error {
				got = append(got, c)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.phonemes) {
				var texts []string
				for _, c := range got {
					texts = append(texts, c.Text)
				}
				t.Fatalf("%d chunks %q, want %d", len(got), texts, len(tc.phonemes))
			}
			for i, c := range got {
				if c.Index != i {
					t.Errorf("chunk %d has index %d", i, c.Index)
				}
				if c.Phonemes != tc.phonemes[i] {
					t.Errorf("chunk %d phonemes %q, want %q", i, c.Phonemes, tc.phonemes[i])
				}
				ids := decodeTones(t, c.PCM, tc.gain)
				if back := e.Vocab().Decode(ids); back != c.Phonemes {
					t.Errorf("chunk %d audio decodes to %q, want %q", i, back, c.Phonemes)
				}
			}
		})
	}
}

// A request with no sentence end is not one chunk: it is broken at word boundaries into parts of
// at most MaxPieceChars, each synthesised and emitted on its own (issue 18 item 4: 240 KB of
// "hello world" was one chunk of ~1 GB of audio). Synthesize (the speak stream's) does the same.
func TestSpeakBreaksUnpunctuatedText(t *testing.T) {
	e := engine(t)
	text := strings.Repeat("hello world ", 200) // 2,400 characters, no sentence end
	for name, speak := range map[string]func(func(Chunk) error) error{
		"Speak": func(emit func(Chunk) error) error { return e.Speak(context.Background(), Request{Text: text}, emit) },
		"Synthesize": func(emit func(Chunk) error) error {
			return e.Synthesize(context.Background(), Request{Text: text}, emit)
		},
	} {
		t.Run(name, func(t *testing.T) {
			var texts []string
			err := speak(func(c Chunk) error {
				if c.Index != len(texts) {
					t.Errorf("chunk %d has index %d", len(texts), c.Index)
				}
				if n := utf8.RuneCountInString(c.Text); n > MaxPieceChars {
					t.Errorf("chunk %d made from %d characters, want at most %d", c.Index, n, MaxPieceChars)
				}
				if ids := decodeTones(t, c.PCM, 1.0); e.Vocab().Decode(ids) != c.Phonemes {
					t.Errorf("chunk %d audio does not decode to its phonemes", c.Index)
				}
				texts = append(texts, c.Text)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(texts) < 6 {
				t.Fatalf("%d chunks, want the 2,400 characters in parts of at most %d", len(texts), MaxPieceChars)
			}
			if got := strings.Join(texts, " "); got != strings.TrimSpace(text) {
				t.Errorf("the chunks do not say the whole text")
			}
		})
	}
}

// No chunk is more than one model call's audio, whatever the text (issue 18 hunt): 395
// characters of digits (or 398 of percentages) are one part by length, but Normalize spells them
// out to ~3,600 (~2,000) characters: before, one chunk of several model calls, held whole. Each
// chunk is at most MaxPhonemes, its audio decodes to them, and the chunks' phonemes are what the
// whole text's are.
func TestSpeakBoundsEachChunk(t *testing.T) {
	e := engine(t)
	for name, text := range map[string]string{
		"digits":   strings.TrimSpace(strings.Repeat("1234567890 ", 36)),
		"percents": strings.TrimSpace(strings.Repeat("99.99% ", 57)),
	} {
		t.Run(name, func(t *testing.T) {
			var chunks []Chunk
			err := e.Synthesize(context.Background(), Request{Text: text}, func(c Chunk) error {
				if n := utf8.RuneCountInString(c.Phonemes); n > MaxPhonemes {
					t.Errorf("chunk %d: %d phonemes, want at most %d (one model call)", c.Index, n, MaxPhonemes)
				}
				if c.Index == 0 { // (decoding is slow under -race: the first chunk stands for all)
					if ids := decodeTones(t, c.PCM, 1.0); e.Vocab().Decode(ids) != c.Phonemes {
						t.Errorf("chunk %d audio does not decode to its phonemes", c.Index)
					}
				}
				if len(c.PCM) > fixture.PhonemeSamples*MaxPhonemes {
					t.Errorf("chunk %d: %d samples, more than one model call's", c.Index, len(c.PCM))
				}
				if utf8.RuneCountInString(c.Text) > 4*MaxPieceChars {
					t.Errorf("chunk %d text of %d characters", c.Index, utf8.RuneCountInString(c.Text))
				}
				chunks = append(chunks, c)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(chunks) < 2 {
				t.Fatalf("%d chunk(s), want the text in several", len(chunks))
			}
			var got, said []string
			for _, c := range chunks {
				got = append(got, c.Phonemes)
				if c.Text != "" {
					said = append(said, c.Text)
				}
			}
			// The chunks speak the whole text: their phonemes, spaces aside, are the text's.
			var want []string
			for _, part := range sentence.Cut(Normalize(text), MaxPieceChars) {
				ps, err := e.Phonemes(part)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, ps)
			}
			squeeze := func(s []string) string { return strings.Join(strings.Fields(strings.Join(s, " ")), "") }
			if squeeze(got) != squeeze(want) {
				t.Errorf("the chunks' phonemes are not the text's")
			}
			t.Logf("%d characters: %d chunks, texts %d", len(text), len(chunks), len(said))
		})
	}
}

// A phoneme string over 510 ids is split; each call gets its own style row (the fixture answers
// a wrong one with silence), and no symbol is lost.
func TestSynthesizeLongPhonemes(t *testing.T) {
	e := engine(t)
	sentence := "ðə kwˈɪk bɹˈWn fˈɑks ʤˈʌmps ˈOvəɹ ðə lˈAzi dˈɔɡ."
	ps := strings.TrimSpace(strings.Repeat(sentence+" ", 20))
	pcm, err := e.SynthesizePhonemes(context.Background(), ps, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	ids := decodeTones(t, pcm, 1.0)
	batches := SplitPhonemes(ps, MaxPhonemes)
	if len(batches) < 2 {
		t.Fatalf("%d batches", len(batches))
	}
	if want := e.Vocab().Encode(strings.Join(batches, "")); len(ids) != len(want) {
		t.Fatalf("%d ids decoded, want %d", len(ids), len(want))
	}
	if got, want := e.Vocab().Decode(ids), strings.Join(batches, ""); got != want {
		t.Errorf("long text decodes differently")
	}
}

func TestVariantExports(t *testing.T) {
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	variants := map[string]fixture.KokoroVariant{
		"onnx-community":         {},
		"tokens, audio rank 1":   {TokenInput: "tokens", AudioOutput: "audio", RankOne: true},
		"int32 speed":            {IntSpeed: true},
		"with a duration output": {Duration: true, IntSpeed: true, TokenInput: "tokens"},
	}
	for name, v := range variants {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(modelDir)); err != nil {
				t.Fatal(err)
			}
			if err := fixture.WriteKokoroVariant(filepath.Join(dir, ModelFile), v); err != nil {
				t.Fatal(err)
			}
			e, err := Load(context.Background(), testEnv, dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			want := "həlˈO wˈɜɹld"
			pcm, err := e.SynthesizePhonemes(context.Background(), want, "af_heart", 1.3)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.Vocab().Decode(decodeTones(t, pcm, 1.0)); got != want {
				t.Errorf("decodes to %q, want %q", got, want)
			}
		})
	}
}

func TestSpeakRefusals(t *testing.T) {
	e := engine(t)
	tests := map[string]struct {
		req  Request
		want error
	}{
		"unknown voice":    {Request{Text: "Hello.", Voice: "nobody"}, ErrUnknownVoice},
		"speed too slow":   {Request{Text: "Hello.", Speed: 0.4}, ErrSpeed},
		"speed too fast":   {Request{Text: "Hello.", Speed: 2.5}, ErrSpeed},
		"speed NaN":        {Request{Text: "Hello.", Speed: float32(math.NaN())}, ErrSpeed},
		"empty":            {Request{Text: ""}, ErrNothingToSay},
		"only spaces":      {Request{Text: "   \n "}, ErrNothingToSay},
		"only punctuation": {Request{Text: "?!... —"}, ErrNothingToSay},
		"only emoji":       {Request{Text: "🙂🎉 ✨"}, ErrNothingToSay},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := e.Speak(context.Background(), tc.req, func(Chunk) error {
				t.Fatal("emitted audio")
				return nil
			})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	err := e.Speak(context.Background(), Request{Text: "x", Voice: "nobody"}, nil)
	if !strings.Contains(err.Error(), "af_heart") || !strings.Contains(err.Error(), "am_adam") {
		t.Errorf("unknown-voice error does not list the mounted voices: %v", err)
	}
	if got := e.Voices(); len(got) != 4 || got[0] != "af_heart" || got[1] != "am_adam" || got[2] != "ef_dora" {
		t.Errorf("Voices() = %v", got)
	}
	// A piece with nothing to say is skipped, the rest is spoken.
	var n int
	if err := e.Speak(context.Background(), Request{Text: "🙂. Hello."}, func(Chunk) error { n++; return nil }); err != nil || n != 1 {
		t.Errorf("Speak(emoji sentence + word) = %v with %d chunks, want 1 chunk", err, n)
	}
}

// A caller waiting for the permit is counted, told once, and leaves when its context ends.
func TestPermitWaitHonoursContext(t *testing.T) {
	e := engine(t)
	e.permit <- struct{}{} // someone else holds the model
	released := false
	defer func() {
		if !released {
			e.release()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		err := e.Synthesize(ctx, Request{Text: "Hello.", OnWait: func() { waited <- struct{}{} }}, func(Chunk) error { return nil })
		done <- err
	}()
	<-waited
	deadline := time.Now().Add(5 * time.Second)
	for e.QueueDepth() != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if d := e.Stats().QueueDepth; d != 1 {
		t.Fatalf("queue depth %d while waiting, want 1", d)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := e.QueueDepth(); d != 0 {
		t.Errorf("queue depth %d after leaving", d)
	}
	e.release()
	released = true
	// The permit works again.
	if err := e.Synthesize(context.Background(), Request{Text: "Hello."}, func(Chunk) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

func TestStatsAfterLoad(t *testing.T) {
	st := engine(t).Stats()
	if st.LoadMs <= 0 || st.WarmupMs <= 0 {
		t.Errorf("stats %+v: load and warm-up must be measured", st)
	}
}

func BenchmarkFirstAudio(b *testing.B) {
	e := engine(b)
	req := Request{Text: "Hello world, the cat sat. Read the codec test."}
	ctx := context.Background()
	stop := errors.New("stop")
	ps, _ := e.Phonemes("Hello world, the cat sat.")
	ids := e.Vocab().Encode(ps)
	v, _ := e.voice("")
	var ort time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := e.infer(ctx, ids, v.Style(len(ids)), 1, nil); err != nil {
			b.Fatal(err)
		}
		ort += time.Since(t0)
		e.Speak(ctx, req, func(Chunk) error { return stop })
	}
	total := b.Elapsed() - ort
	b.ReportMetric(float64(ort.Microseconds())/float64(b.N), "ort-µs/op")
	b.ReportMetric(float64((total-ort).Microseconds())/float64(b.N), "overhead-µs/op")
}

var benchWords = strings.Fields("the quick brown fox jumps over the lazy dog while seven wizards quietly judge boxing matches near an old harbour")

func BenchmarkG2PLexicon(b *testing.B) {
	g := NewG2P(Lexicon{})
	lex := Lexicon{}
	for _, w := range benchWords {
		ps, err := g.word(w)
		if err != nil {
			b.Fatal(err)
		}
		lex[w] = ps
	}
	g = NewG2P(lex)
	words := 0
	for b.Loop() {
		for _, w := range benchWords {
			g.word(w)
		}
		words += len(benchWords)
	}
	b.ReportMetric(float64(words)/b.Elapsed().Seconds(), "words/s")
}

func BenchmarkG2PEspeak(b *testing.B) {
	words := 0
	for b.Loop() {
		for _, w := range benchWords {
			raw, err := espeakIPA(w)
			if err != nil {
				b.Fatal(err)
			}
			espeakToMisaki(raw)
		}
		words += len(benchWords)
	}
	b.ReportMetric(float64(words)/b.Elapsed().Seconds(), "words/s")
}

// Prose (few digits) and number-heavy text: the normaliser's regexps run only where triggered.
func BenchmarkSplitNormalize1MB(b *testing.B) {
	paras := map[string]string{
		"prose":   `The harbour was quiet that morning. "Really?" she asked. Dr. Lee nodded, and the boats rocked gently; nobody spoke. Then J. Doe left! `,
		"numbers": `Dr. Smith paid $1,234.56 at 3:30 pm on the 21st of March 1984. "Really?" she asked. It was 50% off, etc. Then J. Doe left! `,
	}
	for name, para := range paras {
		b.Run(name, func(b *testing.B) { benchSplitNormalize(b, para) })
	}
}

func benchSplitNormalize(b *testing.B, para string) {
	text := strings.Repeat(para, (1<<20)/len(para)+1)[:1<<20]
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		sp := NewSplitter(SplitterOptions{FirstAlone: true, SplitChars: 300})
		for i := 0; i < len(text); i += 64 {
			for _, piece := range sp.Push(text[i:min(i+64, len(text))]) {
				Normalize(piece)
			}
		}
		Normalize(sp.Flush())
	}
}
