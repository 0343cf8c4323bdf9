package kokoro

/*
#cgo LDFLAGS: -lespeak-ng
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
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

// voiced_fill_stack writes spaces over the stack that the next call's frames take. espeak-ng
// 1.51's MatchRule, for a rule's "more syllables follow" context (RULE_SYLLABLE), counts vowels
// forward from the word until it meets a space byte, not stopping at the word's end: past the
// end it reads what its own stack held before, and where none of that is a space it reads on to
// the end of the thread's stack (SIGSEGV in utf8_in: the server's crash on Spanish synthesis,
// es "estás"; seen under valgrind as reads of uninitialised stack). With the frames' untouched
// bytes spaces, that walk ends at the first byte espeak did not write, on every thread. The walk
// goes up from the word (~1 KiB under the entry on that path, whose frames span ~11 KiB), so the
// fill needs only to lie above where it starts; 16 KiB costs nothing measurable, 64 KiB did.
#define VOICED_STACK_FILL (16 << 10)
static __attribute__((noinline)) void voiced_fill_stack(void) {
	char pad[VOICED_STACK_FILL];
	memset(pad, ' ', sizeof pad);
	__asm__ volatile("" : : "r"(pad) : "memory"); // keep the stores
}

static const char *voiced_next_clause(const void **text) {
	voiced_fill_stack();
	return espeak_TextToPhonemes(text, espeakCHARS_UTF8, voicedPhonemeMode);
}

// The probe below is TestEspeakStaysInsideItsStack's: voiced_next_clause over a text on a new
// thread whose whole stack holds one byte value and ends at an inaccessible page.
typedef struct {
	const char *text;
	char *out;
	size_t cap;
} voiced_probe;

static void *voiced_probe_run(void *arg) {
	voiced_probe *p = arg;
	const void *ptr = p->text;
	size_t n = 0;
	while (ptr != NULL) {
		const char *o = voiced_next_clause(&ptr);
		if (o == NULL) break;
		size_t l = strlen(o);
		if (n + l + 2 > p->cap) break;
		if (n > 0) p->out[n++] = ' ';
		memcpy(p->out + n, o, l);
		n += l;
	}
	p->out[n] = 0;
	return NULL;
}

// voiced_probe_stack returns 0 with the clauses' IPA in out, or non-zero when the thread or its
// stack could not be made.
static int voiced_probe_stack(const char *text, int fill, char *out, size_t cap) {
	size_t page = (size_t) sysconf(_SC_PAGESIZE), size = 256 << 10;
	char *mem = mmap(NULL, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) return 1;
	int rc = 2;
	if (mprotect(mem + size, page, PROT_NONE) == 0) {
		memset(mem, fill, size);
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setstack(&attr, mem, size);
		voiced_probe p = {text, out, cap};
		pthread_t th;
		rc = pthread_create(&th, &attr, voiced_probe_run, &p);
		if (rc == 0) pthread_join(th, NULL);
		pthread_attr_destroy(&attr);
	}
	munmap(mem, size + page);
	return rc;
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
	// Padded with zeros: espeak-ng's clause reader looks a few bytes past where it stands. (The
	// SIGSEGV inside voiced_next_clause once seen under -race was not this but MatchRule's walk
	// off its stack: see voiced_fill_stack.)
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

// espeakOnStack is espeakIPAIn's clause loop on a new thread whose stack holds only fill bytes up
// to an inaccessible page (TestEspeakStaysInsideItsStack; one caller at a time: the voice is
// selected before the lock is taken again).
func espeakOnStack(voice, text string, fill byte) (string, error) {
	if _, err := espeakIPAIn(voice, ""); err != nil { // initialise and select the voice
		return "", err
	}
	espeak.mu.Lock()
	defer espeak.mu.Unlock()
	ctext := C.CString(text + "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	defer C.free(unsafe.Pointer(ctext))
	out := (*C.char)(C.malloc(4096))
	defer C.free(unsafe.Pointer(out))
	if rc := C.voiced_probe_stack(ctext, C.int(fill), out, 4096); rc != 0 {
		return "", fmt.Errorf("%w: probe thread: code %d", ErrEspeak, int(rc))
	}
	return C.GoString(out), nil
}
