package whisper

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Files of a Whisper model directory (the mount's models/whisper-small/).
const (
	FileEncoder          = "encoder_model.onnx"
	FileDecoderMerged    = "decoder_model_merged.onnx"
	FileTokenizer        = "tokenizer.json"
	FileConfig           = "config.json"
	FileGenerationConfig = "generation_config.json"
)

// modelConfig is the part of Hugging Face's WhisperConfig the engine reads.
type modelConfig struct {
	DModel             int `json:"d_model"`
	DecoderLayers      int `json:"decoder_layers"`
	DecoderHeads       int `json:"decoder_attention_heads"`
	NumMelBins         int `json:"num_mel_bins"`
	VocabSize          int `json:"vocab_size"`
	MaxTargetPositions int `json:"max_target_positions"`
}

// generationConfig is the part of generation_config.json the greedy loop uses. Pointers tell a
// missing list (fall back to openai's) from an empty one (suppress nothing).
type generationConfig struct {
	SuppressTokens      *[]int `json:"suppress_tokens"`
	BeginSuppressTokens *[]int `json:"begin_suppress_tokens"`
	MaxLength           int    `json:"max_length"`
	IsMultilingual      *bool  `json:"is_multilingual"`
}

// The openai suppress_tokens="-1" sets (docs/models.md §1.7), used only when
// generation_config.json carries no suppress_tokens and the vocabulary is the real one (its
// <|endoftext|> id says which).
var (
	defaultSuppressMultilingual = []int{1, 2, 7, 8, 9, 10, 14, 25, 26, 27, 28, 29, 31, 58, 59, 60, 61, 62, 63, 90, 91, 92, 93,
		359, 503, 522, 542, 873, 893, 902, 918, 922, 931, 1350, 1853, 1982, 2460, 2627, 3246, 3253, 3268, 3536, 3846, 3961,
		4183, 4667, 6585, 6647, 7273, 9061, 9383, 10428, 10929, 11938, 12033, 12331, 12562, 13793, 14157, 14635, 15265,
		15618, 16553, 16604, 18362, 18956, 20075, 21675, 22520, 26130, 26161, 26435, 28279, 29464, 31650, 32302, 32470,
		36865, 42863, 47425, 49870, 50254, 50258, 50358, 50359, 50360, 50361, 50362}
	defaultSuppressEnglish = []int{1, 2, 7, 8, 9, 10, 14, 25, 26, 27, 28, 29, 31, 58, 59, 60, 61, 62, 63, 90, 91, 92, 93,
		357, 366, 438, 532, 685, 705, 796, 930, 1058, 1220, 1267, 1279, 1303, 1343, 1377, 1391, 1635, 1782, 1875, 2162,
		2361, 2488, 3467, 4008, 4211, 4600, 4808, 5299, 5855, 6329, 7203, 9609, 9959, 10563, 10786, 11420, 11709, 11907,
		13163, 13697, 13700, 14808, 15306, 16410, 16791, 17992, 19203, 19510, 20724, 22305, 22935, 27007, 30109, 30420,
		33409, 34949, 40283, 40493, 40549, 47282, 49146, 50257, 50357, 50358, 50359, 50360, 50361}
)

const (
	realEOTMultilingual = 50257
	realEOTEnglish      = 50256
	defaultMaxLength    = 448
)

// decoding is what the greedy loop needs, resolved from the three JSON files.
type decoding struct {
	// prompt is the default prompt: <|startoftranscript|> <|en|> <|transcribe|> <|notimestamps|>
	// (English-only: <|startoftranscript|> <|notimestamps|>). promptFor builds the others.
	prompt                        []int
	sot, transcribe, noTimestamps int
	translate                     int // <|translate|>, -1 when the tokenizer has none
	englishOnly                   bool
	languages                     []string       // the language codes the tokenizer has, in Whisper's order
	langID                        map[string]int // code -> its token id
	langIDs                       []int          // the language token ids (detection reads their scores)
	eot                           int
	suppress                      []int // every step
	beginSuppress                 []int // first generated position only
	timestampBegin                int   // ids >= this are timestamps, masked too; -1 when the vocabulary has none
	maxLength                     int   // total tokens including the prompt
}

func readJSON(dir, name string, v any) error {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrConfig, name, err)
	}
	return nil
}

// loadModelFiles reads config.json, generation_config.json and tokenizer.json from dir.
func loadModelFiles(dir string) (modelConfig, *Tokenizer, decoding, error) {
	var cfg modelConfig
	if err := readJSON(dir, FileConfig, &cfg); err != nil {
		return cfg, nil, decoding{}, err
	}
	if cfg.DModel <= 0 || cfg.DecoderLayers <= 0 || cfg.DecoderHeads <= 0 || cfg.NumMelBins <= 0 || cfg.VocabSize <= 0 {
		return cfg, nil, decoding{}, fmt.Errorf("%w: %s needs positive d_model, decoder_layers, decoder_attention_heads, num_mel_bins and vocab_size (got %+v)",
			ErrConfig, FileConfig, cfg)
	}
	var gen generationConfig
	if err := readJSON(dir, FileGenerationConfig, &gen); err != nil {
		return cfg, nil, decoding{}, err
	}
	data, err := os.ReadFile(filepath.Join(dir, FileTokenizer))
	if err != nil {
		return cfg, nil, decoding{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	tok, err := ParseTokenizer(data)
	if err != nil {
		return cfg, nil, decoding{}, err
	}
	dec, err := resolveDecoding(cfg, gen, tok)
	return cfg, tok, dec, err
}

// resolveDecoding builds the prompt and suppression lists (docs/models.md §1.6-1.8). Special ids
// come from the tokenizer, never from constants.
func resolveDecoding(cfg modelConfig, gen generationConfig, tok *Tokenizer) (decoding, error) {
	d := decoding{eot: tok.EndOfText(), timestampBegin: -1}
	sot, ok := tok.ID(TokenStartOfTranscript)
	if !ok {
		return d, fmt.Errorf("%w: %s has no %s token", ErrConfig, FileTokenizer, TokenStartOfTranscript)
	}
	noTS, ok := tok.ID(TokenNoTimestamps)
	if !ok {
		return d, fmt.Errorf("%w: %s has no %s token", ErrConfig, FileTokenizer, TokenNoTimestamps)
	}
	en, hasEn := tok.ID(TokenEnglish)
	transcribe, hasTask := tok.ID(TokenTranscribe)
	englishOnly := gen.IsMultilingual != nil && !*gen.IsMultilingual
	d.sot, d.transcribe, d.noTimestamps = sot, transcribe, noTS
	d.translate = -1
	if id, ok := tok.ID(TokenTranslate); ok && !englishOnly {
		d.translate = id
	}
	if hasEn && hasTask && !englishOnly {
		d.prompt = []int{sot, en, transcribe, noTS}
		d.languages, d.langID = languageTokens(tok)
		for _, code := range d.languages {
			d.langIDs = append(d.langIDs, d.langID[code])
		}
	} else {
		// English-only checkpoints (is_multilingual: false) take no language or task token.
		d.prompt = []int{sot, noTS}
		d.englishOnly = true
	}
	if ts, ok := tok.ID(TokenTimestampBegin); ok {
		d.timestampBegin = ts
	}
	if d.eot >= cfg.VocabSize {
		return d, fmt.Errorf("%w: %s id %d is outside vocab_size %d", ErrConfig, TokenEndOfText, d.eot, cfg.VocabSize)
	}
	switch {
	case gen.SuppressTokens != nil:
		d.suppress = *gen.SuppressTokens
	case d.eot == realEOTMultilingual:
		d.suppress = defaultSuppressMultilingual
	case d.eot == realEOTEnglish:
		d.suppress = defaultSuppressEnglish
	}
	if gen.BeginSuppressTokens != nil {
		d.beginSuppress = *gen.BeginSuppressTokens
	} else {
		if space, ok := tok.ID(ByteLevel([]byte(" "))); ok {
			d.beginSuppress = append(d.beginSuppress, space)
		}
		d.beginSuppress = append(d.beginSuppress, d.eot)
	}
	d.suppress = inRange(d.suppress, cfg.VocabSize)
	d.beginSuppress = inRange(d.beginSuppress, cfg.VocabSize)
	d.maxLength = gen.MaxLength
	if d.maxLength <= 0 {
		d.maxLength = cfg.MaxTargetPositions
	}
	if d.maxLength <= 0 {
		d.maxLength = defaultMaxLength
	}
	if cfg.MaxTargetPositions > 0 {
		d.maxLength = min(d.maxLength, cfg.MaxTargetPositions)
	}
	if d.maxLength <= len(d.prompt) {
		return d, fmt.Errorf("%w: max_length %d leaves no room after the %d-token prompt", ErrConfig, d.maxLength, len(d.prompt))
	}
	return d, nil
}

func inRange(ids []int, vocab int) []int {
	out := slices.DeleteFunc(slices.Clone(ids), func(id int) bool { return id < 0 || id >= vocab })
	return out
}

// promptFor is the prompt for a language (a served code; "" or any code on an English-only
// checkpoint gives the English one) with or without timestamps.
func (d decoding) promptFor(lang string, timestamps, translate bool) []int {
	if d.englishOnly {
		if timestamps {
			return []int{d.sot}
		}
		return []int{d.sot, d.noTimestamps}
	}
	id, ok := d.langID[lang]
	if !ok {
		id = d.prompt[1]
	}
	task := d.transcribe
	if translate && d.translate >= 0 {
		task = d.translate
	}
	if timestamps {
		return []int{d.sot, id, task}
	}
	return []int{d.sot, id, task, d.noTimestamps}
}
