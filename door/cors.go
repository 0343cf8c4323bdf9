package door

import (
	"net/http"
	"strings"
)

// CORS lets browser pages on the origins the policy allows call next from another site (a page
// on https://app.example.com posting an SDP offer or minting a ticket): it answers the preflight
// (OPTIONS with Access-Control-Request-Method) itself — 204 with the method and the headers the
// page asks for (Authorization, Content-Type, OpenAI-Beta, X-OpenAI-Agents-SDK, …) when the
// origin is allowed, 403 origin_not_allowed when it is not — and marks the real answer for an
// allowed origin, exposing Location (a call's URL). Requests without an Origin, and a page from
// this host, pass as they are.
func CORS(o Origins, methods string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if origin == "" {
			if preflight {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Origin")
		if !o.Allowed(r) {
			if preflight {
				WriteError(w, o.Check(r))
				return
			}
			next.ServeHTTP(w, r) // the route refuses a disallowed origin by name itself (or the browser hides the answer)
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Allow-Credentials", "true")
		if preflight {
			w.Header().Add("Vary", "Access-Control-Request-Headers")
			w.Header().Set("Access-Control-Allow-Methods", methods)
			if h := r.Header.Get("Access-Control-Request-Headers"); h != "" {
				w.Header().Set("Access-Control-Allow-Headers", sanitizeHeaderList(h))
			}
			w.Header().Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Access-Control-Expose-Headers", "Location")
		next.ServeHTTP(w, r)
	})
}

// sanitizeHeaderList keeps the header names a preflight asked for that are tokens.
func sanitizeHeaderList(list string) string {
	var out []string
	for _, h := range strings.Split(list, ",") {
		h = strings.TrimSpace(h)
		if h != "" && !strings.ContainsAny(h, " \t\r\n:;\"") {
			out = append(out, h)
		}
	}
	return strings.Join(out, ", ")
}
