package kokoro

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// sharedData returns $VOICED_SHARED_DATA/rel, skipping the test when it is absent.
func sharedData(t testing.TB, rel string) string {
	t.Helper()
	root := os.Getenv("VOICED_SHARED_DATA")
	if root == "" {
		t.Skip("VOICED_SHARED_DATA not set: reference-data cross-check skipped (make env sets it)")
	}
	p := filepath.Join(root, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference file %s absent (VOICED_SHARED_DATA): cross-check skipped", p)
	}
	return p
}

func TestEspeakToMisaki(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"diphthong O":      {"həlˈo^ʊ", "həlˈO"},
		"A and I and W":    {"nˈe^ɪʃən lˈa^ɪk kˈa^ʊ", "nˈAʃən lˈIk kˈW"},
		"affricates":       {"t^ʃˈɜːt^ʃ d^ʒˈʌd^ʒ", "ʧˈɜɹʧ ʤˈʌʤ"},
		"Y":                {"bˈɔ^ɪ", "bˈY"},
		"syllabic l":       {"bˈɑːɾə^l", "bˈɑTᵊl"},
		"glottal n":        {"bˈʌʔn̩", "bˈʌtn"},
		"rhotic schwa":     {"wˈɔːɾɚ", "wˈɔTəɹ"},
		"long vowels gone": {"ɑː^ɹ juː", "ɑɹ ju"},
		"ɐ":                {"nˈæsɐ", "nˈæsə"},
		"ɪə":               {"hˈɪə", "hˈiə"},
		"syllabic m":       {"ɹˈɪðm̩", "ɹˈɪðᵊm"},
		"r and x":          {"rx", "ɹk"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := espeakToMisaki(tc.in); got != tc.want {
				t.Errorf("espeakToMisaki(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestEspeakWords(t *testing.T) {
	g := NewG2P(nil) // espeak for every word
	tests := map[string]string{
		"hello":  "həlˈO",
		"world":  "wˈɜɹld",
		"church": "ʧˈɜɹʧ",
		"nation": "nˈAʃən",
		"boy":    "bˈY",
		"cow":    "kˈW",
		"bottle": "bˈɑTᵊl",
		"water":  "wˈɔTəɹ",
	}
	for word, want := range tests {
		t.Run(word, func(t *testing.T) {
			got, err := g.Phonemize(word)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s → %q, want %q", word, got, want)
			}
		})
	}
}

func TestPhonemizePunctuation(t *testing.T) {
	lex := Lexicon{"hello": "həlˈO", "world": "wˈɜɹld", "say": "sˈA", "apple": "ˈæpᵊl", "box": "bˈɑks"}
	g := NewG2P(lex)
	tests := map[string]struct{ in, want string }{
		"comma and period": {"Hello, world.", "həlˈO, wˈɜɹld."},
		"quotes":           {`Say "hello" world!`, `sˈA "həlˈO" wˈɜɹld!`},
		"parens":           {"hello (world)?", "həlˈO (wˈɜɹld)?"},
		"emoji dropped":    {"hello 🙂 world", "həlˈO wˈɜɹld"},
		"plural":           {"apples", "ˈæpᵊlz"},
		"sibilant plural":  {"box's", "bˈɑksᵻz"},
		"possessive":       {"world's", "wˈɜɹldz"},
		"case-insensitive": {"HELLO World", "həlˈO wˈɜɹld"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := g.Phonemize(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Phonemize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestLexiconAgainstMisaki(t *testing.T) {
	dir := filepath.Dir(sharedData(t, "misaki/us_gold.json"))
	lex, err := LoadLexicon(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(lex) < 150000 {
		t.Fatalf("lexicon has %d words; gold+silver hold more than 150k", len(lex))
	}
	g := NewG2P(lex)
	tests := map[string]string{
		"hello":    "həlˈO",
		"question": "kwˈɛsʧᵊn",
		"button":   "bˈʌʔn",
		"read":     "ɹˈid", // POS-keyed: DEFAULT
		"today":    "tədˈA",
		"Hello":    "həlˈO",
		"apples":   "ˈæpᵊlz", // not in gold: apple + z
	}
	for word, want := range tests {
		t.Run(word, func(t *testing.T) {
			got, err := g.Phonemize(word)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s → %q, want %q", word, got, want)
			}
		})
	}
}

// The known-good id sequence (docs/models.md §2.4) decodes through the real vocab to its IPA.
func TestKnownGoodIDs(t *testing.T) {
	v, err := LoadVocab(sharedData(t, "kokoro/config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if v.Size() != 114 {
		t.Fatalf("vocab has %d symbols, want 114", v.Size())
	}
	ids := []int64{50, 157, 43, 135, 16, 53, 135, 46, 16, 43, 102, 16, 56, 156, 57, 135, 6, 16, 102, 62, 61, 16, 70, 56, 16, 138, 56, 156, 72, 56, 61, 85, 123, 83, 44, 83, 54, 16, 53, 65, 156, 86, 61, 62, 131, 83, 56, 4, 16, 54, 156, 43, 102, 53, 16, 156, 72, 61, 53, 102, 112, 16, 70, 56, 16, 138, 56, 44, 156, 76, 158, 123, 56, 16, 62, 131, 156, 43, 102, 54, 46, 16, 102, 48, 16, 81, 47, 102, 54, 16, 54, 156, 51, 158, 46, 16, 70, 16, 92, 156, 135, 46, 16, 54, 156, 43, 102, 48, 4, 16, 81, 47, 102, 16, 50, 156, 72, 64, 83, 56, 62, 16, 156, 51, 158, 64, 83, 56, 16, 44, 157, 102, 56, 16, 44, 156, 76, 158, 123, 56, 4}
	want := "hˌaʊ kʊd aɪ nˈoʊ? ɪts ɐn ʌnˈænsɚɹəbəl kwˈɛstʃən. lˈaɪk ˈæskɪŋ ɐn ʌnbˈɔːɹn tʃˈaɪld ɪf ðeɪl lˈiːd ɐ ɡˈʊd lˈaɪf. ðeɪ hˈævənt ˈiːvən bˌɪn bˈɔːɹn."
	if len(ids) != 141 {
		t.Fatalf("%d ids", len(ids))
	}
	if got := v.Decode(ids); got != want {
		t.Errorf("decode:\n got %q\nwant %q", got, want)
	}
	enc := v.Encode(want)
	if len(enc) != len(ids) {
		t.Fatalf("encode gave %d ids", len(enc))
	}
	for i := range ids {
		if enc[i] != ids[i] {
			t.Fatalf("encode id %d = %d, want %d", i, enc[i], ids[i])
		}
	}
	// Unknown symbols are dropped, ASCII g is not ɡ.
	if got := v.Encode("gɡ'"); len(got) != 1 || got[0] != 92 {
		t.Errorf("Encode(\"gɡ'\") = %v, want [92]", got)
	}
}

// StyleRow is clamp(N-1, 0, 509): the row for N ids is bytes [(N-1)*1024 : N*1024] of the table.
func TestStyleRowRealVoice(t *testing.T) {
	path := sharedData(t, "kokoro/voices/af_heart.bin")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVoice(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[int]int{0: 0, 1: 0, 2: 1, 141: 140, 509: 508, 510: 509, 511: 509, 4000: 509}
	for n, row := range rows {
		if got := StyleRow(n); got != row {
			t.Errorf("StyleRow(%d) = %d, want %d", n, got, row)
		}
		style := v.Style(n)
		if len(style) != StyleDim {
			t.Fatalf("style has %d values", len(style))
		}
		for i, x := range style {
			want := math.Float32frombits(binary.LittleEndian.Uint32(raw[row*1024+i*4:]))
			if x != want {
				t.Fatalf("N=%d value %d = %v, want bytes [%d:%d] of the table", n, i, x, row*1024, (row+1)*1024)
			}
		}
	}
	// Rows 0 and 1 start as docs/models.md §2.3 says.
	if r0, r1 := v.Style(1)[0], v.Style(2)[0]; math.Abs(float64(r0)+0.254) > 0.001 || math.Abs(float64(r1)+0.249) > 0.001 {
		t.Errorf("rows 0/1 start %v, %v; want -0.254, -0.249", r0, r1)
	}
}

func TestLoadVoiceRejectsWrongSize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.bin")
	os.WriteFile(p, make([]byte, 1000), 0o644)
	if _, err := LoadVoice(p); err == nil {
		t.Fatal("a 1000-byte voice table loaded")
	}
}

func FuzzPhonemize(f *testing.F) {
	f.Add(`Hello, "world" (again)… 🙂 it's 42!`)
	g := NewG2P(Lexicon{"hello": "həlˈO"})
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 200 {
			return
		}
		if _, err := g.Phonemize(Normalize(text)); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzLexicon(f *testing.F) {
	f.Add([]byte(`{"hello":"həlˈO","read":{"DEFAULT":"ɹˈid","VBD":"ɹˈɛd"},"x":null,"y":{"NOUN":null}}`))
	f.Add([]byte(`{"a":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		lex := Lexicon{}
		if lex.add(b) == nil {
			for w, ps := range lex {
				if ps == "" {
					t.Fatalf("empty entry for %q kept", w)
				}
			}
		}
	})
}
