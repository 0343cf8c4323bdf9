package speechcore

import (
	"strings"

	"github.com/voiced/voiced/speechcore/kokoro"
)

// LanguageHealth is one language in /v1/speech/health: for transcription the languages the
// mounted Whisper can be told (and whether it detects), for synthesis each of Kokoro's voice
// languages, its mounted voices, and whether it is served here (Japanese and Mandarin are not:
// no G2P).
type LanguageHealth struct {
	Code   string   `json:"code"`
	Name   string   `json:"name,omitempty"`
	Prefix string   `json:"voicePrefix,omitempty"`
	Served bool     `json:"served"`
	Voices []string `json:"voices,omitempty"`
	Espeak string   `json:"espeak,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// languagesHealth fills the models' language lists (once the engines are loaded).
func (s *Service) languagesHealth(h *Health) {
	if w := s.Whisper; w != nil {
		for _, code := range w.Languages() {
			h.Transcription.Languages = append(h.Transcription.Languages, LanguageHealth{Code: code, Served: true})
		}
		h.Transcription.DefaultLanguage = w.DefaultLanguage()
		h.Transcription.DetectsLanguage = w.CanDetect()
	}
	if k := s.Kokoro; k != nil {
		for _, l := range kokoro.Languages {
			lh := LanguageHealth{Code: l.Code, Name: l.Name, Prefix: string(l.Prefix), Served: l.Served, Espeak: l.Espeak}
			if !l.Served {
				lh.Reason = "no G2P for " + l.Name + " here (Kokoro's uses misaki's " + l.Code + " G2P); its voices are refused: voice_language_not_served"
			}
			for _, v := range k.Voices() {
				if strings.HasPrefix(v, string(l.Prefix)) {
					if got, ok := kokoro.VoiceLanguage(v); ok && got.Prefix == l.Prefix {
						lh.Voices = append(lh.Voices, v)
					}
				}
			}
			h.Synthesis.Languages = append(h.Synthesis.Languages, lh)
		}
	}
}
