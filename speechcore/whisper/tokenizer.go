package whisper

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Tokenizer decodes Whisper token ids to text: tokenizer.json's byte-level BPE vocabulary plus its
// added (special) tokens. It only decodes; the engine never encodes text.
type Tokenizer struct {
	tokens  []string       // id -> token string, in GPT-2's bytes_to_unicode alphabet
	ids     map[string]int // token string -> id, vocab and added tokens
	special []bool         // id -> an added special token
	eot     int            // <|endoftext|>; ids >= eot are never text
}

// Special-token strings, looked up in tokenizer.json (their ids differ between vocabularies).
const (
	TokenEndOfText         = "<|endoftext|>"
	TokenStartOfTranscript = "<|startoftranscript|>"
	TokenEnglish           = "<|en|>"
	TokenTranscribe        = "<|transcribe|>"
	TokenTranslate         = "<|translate|>"
	TokenNoTimestamps      = "<|notimestamps|>"
	TokenTimestampBegin    = "<|0.00|>"
)

// tokenizerFile is the part of the Hugging Face tokenizers serialisation that decoding needs.
type tokenizerFile struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Model struct {
		Type  string         `json:"type"`
		Vocab map[string]int `json:"vocab"`
	} `json:"model"`
}

// ParseTokenizer reads a tokenizer.json.
func ParseTokenizer(data []byte) (*Tokenizer, error) {
	var f tokenizerFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: tokenizer.json: %v", ErrConfig, err)
	}
	if f.Model.Type != "" && f.Model.Type != "BPE" {
		return nil, fmt.Errorf("%w: tokenizer.json model type %q, want BPE", ErrConfig, f.Model.Type)
	}
	added := make(map[string]int, len(f.AddedTokens))
	for _, a := range f.AddedTokens {
		added[a.Content] = a.ID
	}
	return NewTokenizer(f.Model.Vocab, added)
}

// NewTokenizer builds a tokenizer from a byte-level vocabulary (token string -> id) and the added
// special tokens (content -> id). The added tokens must include <|endoftext|>.
func NewTokenizer(vocab, added map[string]int) (*Tokenizer, error) {
	size := 0
	for _, m := range []map[string]int{vocab, added} {
		for tok, id := range m {
			if id < 0 {
				return nil, fmt.Errorf("%w: tokenizer.json: token %q has negative id %d", ErrConfig, tok, id)
			}
			size = max(size, id+1)
		}
	}
	if size > 1<<22 {
		return nil, fmt.Errorf("%w: tokenizer.json: id %d is implausibly large", ErrConfig, size-1)
	}
	t := &Tokenizer{
		tokens:  make([]string, size),
		ids:     make(map[string]int, len(vocab)+len(added)),
		special: make([]bool, size),
	}
	for tok, id := range vocab {
		t.tokens[id] = tok
		t.ids[tok] = id
	}
	for tok, id := range added {
		t.tokens[id] = tok
		t.ids[tok] = id
		t.special[id] = true
	}
	eot, ok := t.ids[TokenEndOfText]
	if !ok {
		return nil, fmt.Errorf("%w: tokenizer.json has no %s token", ErrConfig, TokenEndOfText)
	}
	t.eot = eot
	return t, nil
}

// ID returns the id of a token string (vocabulary or added token).
func (t *Tokenizer) ID(token string) (int, bool) {
	id, ok := t.ids[token]
	return id, ok
}

// Size is one past the largest id.
func (t *Tokenizer) Size() int { return len(t.tokens) }

// EndOfText is <|endoftext|>'s id.
func (t *Tokenizer) EndOfText() int { return t.eot }

// Decode turns ids into text (docs/models.md §1.9): ids at or past <|endoftext|> and special
// tokens are dropped, each token's runes are mapped back to bytes through the inverse of GPT-2's
// bytes_to_unicode, the bytes are read as UTF-8 with invalid sequences replaced, and one leading
// space is stripped.
func (t *Tokenizer) Decode(ids []int) string {
	s := string(toValidUTF8(t.DecodeBytes(ids)))
	return strings.TrimPrefix(s, " ")
}

// DecodeBytes returns the raw bytes ids stand for, without the UTF-8 repair or the space strip.
func (t *Tokenizer) DecodeBytes(ids []int) []byte {
	var b []byte
	for _, id := range ids {
		if id < 0 || id >= t.eot || id >= len(t.tokens) || t.special[id] {
			continue
		}
		b = appendTokenBytes(b, t.tokens[id])
	}
	return b
}

// appendTokenBytes maps each rune of a byte-level token to its byte. A rune outside the
// bytes_to_unicode alphabet (a hand-written vocabulary) is kept as its own UTF-8.
func appendTokenBytes(b []byte, tok string) []byte {
	for _, r := range tok {
		if by, ok := unicodeToByte(r); ok {
			b = append(b, by)
		} else {
			b = utf8.AppendRune(b, r)
		}
	}
	return b
}

// toValidUTF8 replaces every byte that does not start a valid sequence with U+FFFD, as Python's
// bytes.decode(errors="replace") does for a lone bad byte.
func toValidUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
			b = b[1:]
			continue
		}
		out = append(out, b[:n]...)
		b = b[n:]
	}
	return out
}

// GPT-2's bytes_to_unicode: bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF are their own code point;
// the other 68 bytes, in increasing order, become U+0100 + n.
var byteToRune, runeToByte = buildByteAlphabet()

func buildByteAlphabet() ([256]rune, map[rune]byte) {
	var fwd [256]rune
	inv := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		printable := (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			fwd[b] = rune(b)
		} else {
			fwd[b] = rune(0x100 + n)
			n++
		}
		inv[fwd[b]] = byte(b)
	}
	return fwd, inv
}

func unicodeToByte(r rune) (byte, bool) {
	b, ok := runeToByte[r]
	return b, ok
}

// ByteLevel returns raw bytes written in the bytes_to_unicode alphabet, the form tokenizer.json
// stores tokens in.
func ByteLevel(raw []byte) string {
	var sb strings.Builder
	for _, b := range raw {
		sb.WriteRune(byteToRune[b])
	}
	return sb.String()
}
