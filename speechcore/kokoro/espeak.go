package kokoro

/*
#cgo LDFLAGS: -lespeak-ng
#include <stdlib.h>
#include <string.h>
#include <espeak-ng/speak_lib.h>

// IPA output with '^' as the tie inside multi-letter phonemes (a^ɪ, t^ʃ), as misaki's fallback
// asks of phonemizer (tie='^').
static const int voicedPhonemeMode = espeakPHONEMES_IPA | espeakPHONEMES_TIE | ('^' << 8);

// voiced_set_language selects a voice by language tag (fr-fr, pt-br, es), as phonemizer does;
// espeak_SetVoiceByName wants a voice file's name, which differs from the tag (fr-fr is roa/fr).
static int voiced_set_language(const char *lang) {
	espeak_VOICE v;
	memset(&v, 0, sizeof v);
	v.languages = lang;
	return espeak_SetVoiceByProperties(&v);
}

static const char *voiced_next_clause(const void **text) {
	return espeak_TextToPhonemes(text, espeakCHARS_UTF8, voicedPhonemeMode);
}
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"
)

// espeak is the process's one espeak-ng instance. The library keeps global state and is not
// thread-safe, so every call holds mu.
var espeak struct {
	mu      sync.Mutex
	voice   string
	initErr error
	inited  bool
	tags    map[string]*C.char // language tags handed to espeak-ng, kept for its lifetime
}

// espeakVoice is the espeak-ng voice misaki's American fallback uses.
const espeakVoice = "en-us"

func espeakInit() error {
	if espeak.inited {
		return espeak.initErr
	}
	espeak.inited = true
	// DONT_EXIT: a missing data directory must be an error, not the end of the process.
	if rate := C.espeak_Initialize(C.AUDIO_OUTPUT_SYNCHRONOUS, 0, nil, C.espeakINITIALIZE_DONT_EXIT); rate < 0 {
		espeak.initErr = fmt.Errorf("%w: espeak_Initialize failed (is espeak-ng-data installed?)", ErrEspeak)
		return espeak.initErr
	}
	name := C.CString(espeakVoice)
	defer C.free(unsafe.Pointer(name))
	if rc := C.espeak_SetVoiceByName(name); rc != C.EE_OK {
		espeak.initErr = fmt.Errorf("%w: voice %s not found (code %d)", ErrEspeak, espeakVoice, int(rc))
		return espeak.initErr
	}
	espeak.voice = espeakVoice
	return nil
}

// espeakIPA returns espeak-ng's raw IPA for text (tie '^', stress marks kept), clauses joined
// by a space. Punctuation is not reported by espeak; callers pass words.
func espeakIPA(text string) (string, error) { return espeakIPAIn("", text) }

// espeakIPAIn is espeakIPA in an espeak-ng voice ("" = en-us): the voice is switched under the
// lock when it differs from the last one used.
func espeakIPAIn(voice, text string) (string, error) {
	espeak.mu.Lock()
	defer espeak.mu.Unlock()
	if err := espeakInit(); err != nil {
		return "", err
	}
	if voice == "" {
		voice = espeakVoice
	}
	if voice != espeak.voice {
		// espeak-ng keeps the selector's languages pointer (voice_selected) after the call:
		// the string must outlive it, so each tag's C string is made once and never freed.
		name, ok := espeak.tags[voice]
		if !ok {
			name = C.CString(voice)
			if espeak.tags == nil {
				espeak.tags = map[string]*C.char{}
			}
			espeak.tags[voice] = name
		}
		rc := C.voiced_set_language(name)
		if rc != C.EE_OK {
			return "", fmt.Errorf("%w: voice %s not found (code %d)", ErrEspeak, voice, int(rc))
		}
		espeak.voice = voice
	}
	// Padded with zeros: espeak-ng's clause reader looks a few bytes past where it stands. A
	// SIGSEGV inside voiced_next_clause at a page boundary (TestSpanishVoiceSpeaksSpanish, once
	// under -race) is taken to be that read past the terminator; not proven.
	ctext := C.CString(text + "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	defer C.free(unsafe.Pointer(ctext))
	ptr := unsafe.Pointer(ctext)
	var clauses []string
	for ptr != nil {
		out := C.voiced_next_clause(&ptr)
		if out == nil {
			break
		}
		if s := strings.TrimSpace(C.GoString(out)); s != "" {
			clauses = append(clauses, s)
		}
	}
	return strings.Join(clauses, " "), nil
}
