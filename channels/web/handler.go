package web

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"strings"
)

// csp allows the console's own scripts, styles and API and nothing else:
// no inline script, no other origin, no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Handler serves the console: the pages, their files and the JSON API.
func (w *Web) Handler() http.Handler {
	files, _ := fs.Sub(static, "static")
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(files)))
	mux.HandleFunc("GET /{$}", func(rw http.ResponseWriter, r *http.Request) {
		if _, ok := w.session(r); !ok {
			w.count("unauthorized")
			http.Redirect(rw, r, "/signed-out", http.StatusSeeOther)
			return
		}
		w.count("page")
		w.page(rw, http.StatusOK, "index.html")
	})
	mux.HandleFunc("GET /login", func(rw http.ResponseWriter, _ *http.Request) { w.page(rw, http.StatusOK, "login.html") })
	mux.HandleFunc("POST /login", w.signIn)
	mux.HandleFunc("GET /signed-out", func(rw http.ResponseWriter, _ *http.Request) {
		w.page(rw, http.StatusOK, "signed-out.html")
	})

	api := func(pattern string, h func(http.ResponseWriter, *http.Request, visitor)) {
		mux.HandleFunc(pattern, w.guard(h))
	}
	api("GET /api/session", w.sessionInfo)
	api("GET /api/sessions", w.listSessions)
	api("DELETE /api/sessions/{id}", w.revoke)
	api("POST /api/logout", w.logout)
	api("GET /api/events", func(rw http.ResponseWriter, r *http.Request, _ visitor) { w.events(rw, r) })
	api("GET /api/messages", w.messages)
	api("POST /api/messages", w.send)
	api("GET /api/approvals", w.pendingApprovals)
	api("POST /api/approvals/{id}", w.decide)
	w.dashboardRoutes(api)
	mux.HandleFunc("/api/", func(rw http.ResponseWriter, _ *http.Request) {
		writeError(rw, http.StatusNotFound, "no such endpoint")
	})
	return headers(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if !w.knownHost(r) {
			w.count("forbidden")
			http.Error(rw, "this console is not served under that name", http.StatusMisdirectedRequest)
			return
		}
		mux.ServeHTTP(rw, r)
	}))
}

// guard lets signed-in requests through, and state changes only with
// the page's CSRF token from the console's own origin.
func (w *Web) guard(h func(http.ResponseWriter, *http.Request, visitor)) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		v, ok := w.session(r)
		if !ok {
			w.count("unauthorized")
			writeError(rw, http.StatusUnauthorized, "not signed in: ask for a link with /web in Telegram or `nanobot web login`")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !w.checkCSRF(r, v) {
			w.count("forbidden")
			w.log.Warn("a state change without the page's CSRF token was refused", "path", r.URL.Path, "session", v.ID)
			writeError(rw, http.StatusForbidden, "refused: the request did not come from the console's page")
			return
		}
		if r.URL.Path == "/api/events" {
			w.count("events")
		} else {
			w.count("api")
		}
		r.Body = http.MaxBytesReader(rw, r.Body, maxBody)
		h(rw, r, v)
	}
}

// maxBody bounds a request's body: a MEMORY document is the largest.
const maxBody = 1 << 20

func (w *Web) count(kind string) {
	if w.hooks.Request != nil {
		w.hooks.Request(kind)
	}
}

// headers sets what every response carries.
func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h := rw.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin") // links out of the console send nothing
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if strings.HasPrefix(r.URL.Path, "/static/") {
			// Asked again each time (they are small): a page after an
			// upgrade never runs the old script against the new API.
			h.Set("Cache-Control", "no-cache")
		} else {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(rw, r)
	})
}

// page serves one of the embedded pages.
func (w *Web) page(rw http.ResponseWriter, status int, name string) {
	data, err := static.ReadFile("static/" + name)
	if err != nil {
		http.Error(rw, "page missing", http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.WriteHeader(status)
	rw.Write(data)
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	json.NewEncoder(rw).Encode(v)
}

func writeError(rw http.ResponseWriter, status int, msg string) {
	writeJSON(rw, status, map[string]string{"error": msg})
}

// fail answers an error of the daemon's, logged, not shown in full.
func (w *Web) fail(rw http.ResponseWriter, what string, err error) {
	w.log.Error(what, "err", err)
	writeError(rw, http.StatusInternalServerError, "could not "+what+"; see the daemon's log")
}

// readJSON decodes a request's body into v.
func readJSON(rw http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		writeError(rw, http.StatusBadRequest, "the body is not the JSON expected: "+err.Error())
		return false
	}
	return true
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
