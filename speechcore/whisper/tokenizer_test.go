package whisper

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// tiktokenTokenizer builds a tokenizer the way openai/whisper's get_encoding does: the BPE ranks
// of a .tiktoken file (rank = id), then the specials appended in order (docs/models.md §1.6).
func tiktokenTokenizer(t testing.TB, name string) (*Tokenizer, [][]byte) {
	t.Helper()
	dir := os.Getenv("VOICED_SHARED_DATA")
	if dir == "" {
		t.Skip("VOICED_SHARED_DATA unset: the real Whisper vocabularies are not available (run through make)")
	}
	data, err := os.ReadFile(filepath.Join(dir, "whisper", name))
	if os.IsNotExist(err) {
		t.Skipf("%s absent (VOICED_SHARED_DATA, the reference data): skipping the real-vocabulary check", filepath.Join(dir, "whisper", name))
	}
	if err != nil {
		t.Fatal(err)
	}
	vocab := map[string]int{}
	var raw [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(f[0])
		if strings.Trim(f[0], "=") == "" {
			b, err = nil, nil // multilingual rank 50256 is "=": Python's lenient b64decode reads it as empty
		}
		if err != nil {
			t.Fatal(err)
		}
		rank, err := strconv.Atoi(f[1])
		if err != nil || rank != len(raw) {
			t.Fatalf("rank %q out of order at %d", f[1], len(raw))
		}
		vocab[ByteLevel(b)] = rank
		raw = append(raw, b)
	}
	n := len(raw)
	specials := []string{TokenEndOfText, TokenStartOfTranscript}
	for i := 0; i < 99; i++ { // both vocabularies carry the 99 language tokens
		specials = append(specials, "<|lang"+strconv.Itoa(i)+"|>")
	}
	specials[2] = TokenEnglish
	specials = append(specials, "<|translate|>", TokenTranscribe, "<|startoflm|>", "<|startofprev|>", "<|nospeech|>", TokenNoTimestamps, TokenTimestampBegin)
	added := map[string]int{}
	for i, s := range specials {
		added[s] = n + i
	}
	tok, err := NewTokenizer(vocab, added)
	if err != nil {
		t.Fatal(err)
	}
	return tok, raw
}

func TestTokenizerRealVocabularies(t *testing.T) {
	cases := []struct {
		file          string
		eot, sot, noT int
		known         map[int]string
	}{
		{"multilingual.tiktoken", 50257, 50258, 50257 + 1 + 99 + 6, map[int]string{220: " ", 11: ",", 13: "."}},
		{"gpt2.tiktoken", 50256, 50257, 0, map[int]string{220: " ", 11: ",", 13: ".", 15496: "Hello", 995: " world"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			tok, raw := tiktokenTokenizer(t, c.file)
			if tok.EndOfText() != c.eot {
				t.Fatalf("<|endoftext|> = %d, want %d", tok.EndOfText(), c.eot)
			}
			if id, _ := tok.ID(TokenStartOfTranscript); id != c.sot {
				t.Fatalf("<|startoftranscript|> = %d, want %d", id, c.sot)
			}
			if c.noT != 0 {
				if id, _ := tok.ID(TokenNoTimestamps); id != 50363 {
					t.Fatalf("<|notimestamps|> = %d, want 50363", id)
				}
			}
			for id, want := range c.known {
				if got := string(tok.DecodeBytes([]int{id})); got != want {
					t.Errorf("id %d decodes to %q, want %q", id, got, want)
				}
			}
			// Every rank's byte-level string maps back to exactly its bytes.
			for id, b := range raw {
				if got := tok.DecodeBytes([]int{id}); !bytes.Equal(got, b) {
					t.Fatalf("id %d: bytes %q, want %q", id, got, b)
				}
			}
			// Specials and everything past <|endoftext|> are dropped; one leading space stripped.
			sot, _ := tok.ID(TokenStartOfTranscript)
			ids := []int{sot, 220}
			for _, w := range []string{"A", "B"} {
				id, ok := tok.ID(ByteLevel([]byte(w)))
				if !ok {
					t.Fatalf("no token for %q", w)
				}
				ids = append(ids, id, 220)
			}
			ids = append(ids, tok.EndOfText(), tok.Size()-1)
			if got := tok.Decode(ids); got != "A B " {
				t.Fatalf("Decode = %q, want %q", got, "A B ")
			}
		})
	}
}

func TestDecodeReplacesInvalidUTF8(t *testing.T) {
	vocab := map[string]int{ByteLevel([]byte{0xC3}): 0, ByteLevel([]byte{0xA9}): 1, ByteLevel([]byte(" x")): 2, ByteLevel([]byte{0xFF}): 3}
	tok, err := NewTokenizer(vocab, map[string]int{TokenEndOfText: 4})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		ids  []int
		want string
	}{
		{"split multibyte joined", []int{2, 0, 1}, "xé"},
		{"lone lead byte", []int{0, 2}, "\uFFFD x"},
		{"invalid byte", []int{3}, "\uFFFD"},
		{"ids past eot dropped", []int{2, 4, 5, -1}, "x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := tok.Decode(c.ids)
			if got != c.want || !utf8.ValidString(got) {
				t.Fatalf("Decode(%v) = %q, want %q", c.ids, got, c.want)
			}
		})
	}
}

func TestByteAlphabet(t *testing.T) {
	for b := 0; b < 256; b++ {
		s := ByteLevel([]byte{byte(b)})
		if got, ok := unicodeToByte([]rune(s)[0]); !ok || got != byte(b) {
			t.Fatalf("byte %#x -> %q -> %#x", b, s, got)
		}
	}
	if ByteLevel([]byte(" ")) != "\u0120" || ByteLevel([]byte("\n")) != "\u010A" || ByteLevel([]byte{0xAD}) != "\u0143" {
		t.Fatal("bytes_to_unicode differs from GPT-2's")
	}
}

func FuzzParseTokenizer(f *testing.F) {
	f.Add([]byte(`{"added_tokens":[{"id":3,"content":"<|endoftext|>","special":true}],"model":{"type":"BPE","vocab":{"a":0,"Ġb":1}}}`))
	f.Add([]byte(`{"model":{"vocab":{"a":-1}}}`))
	f.Add([]byte(`{"model":{"vocab":{"a":99999999}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := ParseTokenizer(data)
		if err != nil {
			return
		}
		ids := make([]int, 0, tok.Size()+2)
		for i := -1; i <= tok.Size(); i++ {
			ids = append(ids, i)
		}
		if s := tok.Decode(ids); !utf8.ValidString(s) {
			t.Fatalf("invalid UTF-8 from Decode: %q", s)
		}
	})
}

func TestResolveDecoding(t *testing.T) {
	specials := func(names ...string) map[string]int {
		m := map[string]int{}
		for i, n := range names {
			m[n] = 10 + i
		}
		return m
	}
	vocab := map[string]int{ByteLevel([]byte(" ")): 0, "a": 1}
	ptr := func(v []int) *[]int { return &v }
	no := false
	cases := []struct {
		name       string
		added      map[string]int
		gen        generationConfig
		wantPrompt []int
		wantBegin  []int
		wantSupp   []int
		wantMax    int
		wantErr    bool
	}{
		{"multilingual prompt, begin fallback", specials(TokenEndOfText, TokenStartOfTranscript, TokenEnglish, TokenTranscribe, TokenNoTimestamps),
			generationConfig{}, []int{11, 12, 13, 14}, []int{0, 10}, nil, 448, false},
		{"english-only prompt", specials(TokenEndOfText, TokenStartOfTranscript, TokenEnglish, TokenTranscribe, TokenNoTimestamps),
			generationConfig{IsMultilingual: &no, MaxLength: 20}, []int{11, 14}, []int{0, 10}, nil, 20, false},
		{"no language tokens", specials(TokenEndOfText, TokenStartOfTranscript, TokenNoTimestamps),
			generationConfig{SuppressTokens: ptr([]int{1, 999}), BeginSuppressTokens: ptr([]int{})}, []int{11, 12}, []int{}, []int{1}, 448, false},
		{"no sot", specials(TokenEndOfText, TokenNoTimestamps), generationConfig{}, nil, nil, nil, 0, true},
		{"max length too short", specials(TokenEndOfText, TokenStartOfTranscript, TokenNoTimestamps), generationConfig{MaxLength: 2}, nil, nil, nil, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tok, err := NewTokenizer(vocab, c.added)
			if err != nil {
				t.Fatal(err)
			}
			d, err := resolveDecoding(modelConfig{VocabSize: 20, MaxTargetPositions: 448}, c.gen, tok)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want error %v", err, c.wantErr)
			}
			if err != nil {
				return
			}
			js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
			if js(d.prompt) != js(c.wantPrompt) || js(d.beginSuppress) != js(c.wantBegin) || js(d.suppress) != js(c.wantSupp) || d.maxLength != c.wantMax {
				t.Fatalf("got prompt %v begin %v suppress %v max %d", d.prompt, d.beginSuppress, d.suppress, d.maxLength)
			}
		})
	}
}

func FuzzGenerationConfig(f *testing.F) {
	f.Add([]byte(`{"suppress_tokens":[1,2,9999],"begin_suppress_tokens":[0,10],"max_length":448,"is_multilingual":true}`))
	f.Add([]byte(`{"suppress_tokens":[],"max_length":3,"is_multilingual":false}`))
	f.Add([]byte(`{"max_length":-5}`))
	vocab := map[string]int{ByteLevel([]byte(" ")): 0, "a": 1}
	added := map[string]int{TokenEndOfText: 10, TokenStartOfTranscript: 11, TokenEnglish: 12, TokenTranscribe: 13, TokenNoTimestamps: 14}
	tok, err := NewTokenizer(vocab, added)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var gen generationConfig
		if json.Unmarshal(data, &gen) != nil {
			return
		}
		d, err := resolveDecoding(modelConfig{VocabSize: 20, MaxTargetPositions: 448}, gen, tok)
		if err != nil {
			return
		}
		if d.maxLength <= len(d.prompt) || d.maxLength > 448 {
			t.Fatalf("max length %d with a %d-token prompt", d.maxLength, len(d.prompt))
		}
		for _, id := range append(append([]int(nil), d.suppress...), d.beginSuppress...) {
			if id < 0 || id >= 20 {
				t.Fatalf("suppressed id %d outside the vocabulary", id)
			}
		}
	})
}
