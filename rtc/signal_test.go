package rtc

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"net/textproto"
	"strings"
	"testing"
)

const chromeOffer = "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n" +
	"a=group:BUNDLE 0 1\r\n" +
	"m=audio 9 UDP/TLS/RTP/SAVPF 111 0\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\na=sendrecv\r\n" +
	"a=rtpmap:111 opus/48000/2\r\na=fmtp:111 minptime=10;useinbandfec=1\r\na=rtpmap:0 PCMU/8000\r\n" +
	"m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=sctp-port:5000\r\n"

func TestValidateOffer(t *testing.T) {
	if err := ValidateOffer(chromeOffer); err != nil {
		t.Fatalf("a browser offer: %v", err)
	}
	noOpus := strings.Replace(strings.Replace(chromeOffer, "a=rtpmap:111 opus/48000/2\r\n", "", 1), " 111 0", " 0", 1)
	if err := ValidateOffer(noOpus); !errors.Is(err, ErrNoOpus) {
		t.Fatalf("audio without Opus: %v, want ErrNoOpus", err)
	}
	noAudio := "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n" +
		"m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\n"
	if err := ValidateOffer(noAudio); !errors.Is(err, ErrNoAudio) {
		t.Fatalf("no audio: %v, want ErrNoAudio", err)
	}
	if err := ValidateOffer("hello"); !errors.Is(err, ErrBadOffer) {
		t.Fatalf("garbage: %v, want ErrBadOffer", err)
	}
}

func multipartBody(t *testing.T, parts map[string]string) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, name := range []string{"sdp", "session"} {
		v, ok := parts[name]
		if !ok {
			continue
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="`+name+`"`)
		if name == "sdp" {
			h.Set("Content-Type", "application/sdp")
		} else {
			h.Set("Content-Type", "application/json")
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		pw.Write([]byte(v))
	}
	w.Close()
	return w.FormDataContentType(), &buf
}

func TestParseCallBody(t *testing.T) {
	offer, session, err := ParseCallBody("application/sdp", strings.NewReader(chromeOffer))
	if err != nil || offer != chromeOffer || session != nil {
		t.Fatalf("application/sdp: %q %q %v", offer, session, err)
	}
	sess := `{"type":"realtime","model":"gpt-realtime","audio":{"output":{"voice":"marin"}}}`
	ct, body := multipartBody(t, map[string]string{"sdp": chromeOffer, "session": sess})
	offer, session, err = ParseCallBody(ct, body)
	if err != nil || offer != chromeOffer || string(session) != sess {
		t.Fatalf("multipart: %q %q %v", offer, session, err)
	}
	ct, body = multipartBody(t, map[string]string{"sdp": chromeOffer})
	if _, session, err = ParseCallBody(ct, body); err != nil || session != nil {
		t.Fatalf("multipart without session: %q %v", session, err)
	}
	ct, body = multipartBody(t, map[string]string{"session": sess})
	if _, _, err = ParseCallBody(ct, body); !errors.Is(err, ErrNoSDPPart) {
		t.Fatalf("no sdp part: %v, want ErrNoSDPPart", err)
	}
	ct, body = multipartBody(t, map[string]string{"sdp": chromeOffer, "session": "[1]"})
	if _, _, err = ParseCallBody(ct, body); !errors.Is(err, ErrBadSession) {
		t.Fatalf("session not an object: %v, want ErrBadSession", err)
	}
	if _, _, err = ParseCallBody("application/json", strings.NewReader("{}")); !errors.Is(err, ErrContentType) {
		t.Fatalf("json body: %v, want ErrContentType", err)
	}
	if _, _, err = ParseCallBody("multipart/form-data", strings.NewReader("x")); !errors.Is(err, ErrBadMultipart) {
		t.Fatalf("no boundary: %v, want ErrBadMultipart", err)
	}
	cut := "--b\r\nContent-Disposition: form-data; name=\"sdp\"\r\n\r\nv=0"
	if _, _, err = ParseCallBody("multipart/form-data; boundary=b", strings.NewReader(cut)); !errors.Is(err, ErrBadMultipart) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut part: %v, want ErrBadMultipart wrapping io.ErrUnexpectedEOF", err)
	}
	if _, _, err = ParseCallBody("application/sdp", bytes.NewReader(make([]byte, MaxSignalBody+1))); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("huge body: %v, want ErrBodyTooLarge", err)
	}
}

func FuzzValidateOffer(f *testing.F) {
	f.Add(chromeOffer)
	f.Add("v=0\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		err := ValidateOffer(s)
		if err != nil && !errors.Is(err, ErrBadOffer) && !errors.Is(err, ErrNoAudio) && !errors.Is(err, ErrNoOpus) &&
			!errors.Is(err, ErrTooManyCandidates) && !errors.Is(err, ErrTooManyMedia) {
			t.Fatalf("unnamed error: %v", err)
		}
	})
}

func FuzzParseCallBody(f *testing.F) {
	ct, body := multipartBody(&testing.T{}, map[string]string{"sdp": chromeOffer, "session": `{"a":1}`})
	f.Add(ct, body.Bytes())
	f.Add("application/sdp", []byte(chromeOffer))
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		offer, session, err := ParseCallBody(ct, bytes.NewReader(body))
		if err != nil {
			if offer != "" || session != nil {
				t.Fatal("values with an error")
			}
			return
		}
		if session != nil && session[0] != '{' && !strings.HasPrefix(strings.TrimSpace(string(session)), "{") {
			t.Fatalf("session not an object: %q", session)
		}
	})
}

func TestCallOwner(t *testing.T) {
	for id, want := range map[string]string{
		"rtc_node-1.00ff": "node-1",
		"rtc_00ff":        "",
		"rtc_.00ff":       "",
		"tr_node.00ff":    "",
		"":                "",
	} {
		if got := callOwner(id); got != want {
			t.Errorf("callOwner(%q) = %q, want %q", id, got, want)
		}
	}
	s := &Signal{}
	if id := s.newCallID(); callOwner(id) != "" || !strings.HasPrefix(id, "rtc_") {
		t.Errorf("a single node's call id %q", id)
	}
}
