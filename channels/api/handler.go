package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/nanobot-go/nanobot/internal/lazyre"
	"github.com/nanobot-go/nanobot/turns"
)

const maxBody = 8 << 20

// Handler serves the API's routes.
func (a *API) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := strings.TrimSuffix(r.URL.Path, "/")
		var handle func(http.ResponseWriter, *http.Request, hashedKey)
		var method string
		switch {
		case route == "/v1/chat/completions":
			handle, method = a.chat, http.MethodPost
		case route == "/v1/models":
			handle, method = a.models, http.MethodGet
		case strings.HasPrefix(route, "/v1/models/"):
			handle, method = a.model, http.MethodGet
		default:
			writeError(w, newError(http.StatusNotFound, "invalid_request_error", "unknown_url",
				"Invalid URL (%s %s): this server has /v1/chat/completions and /v1/models.", r.Method, printableLine(r.URL.Path, 200)))
			return
		}
		if r.Method != method {
			w.Header().Set("Allow", method)
			writeError(w, newError(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_supported",
				"%s %s is not supported; use %s.", r.Method, route, method))
			return
		}
		k, err := a.authorize(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="nanobot"`)
			writeError(w, err)
			a.outcome("", "unauthorized")
			return
		}
		handle(w, r, k)
	})
}

// authorize finds the request's key before anything else is read of it.
func (a *API) authorize(r *http.Request) (hashedKey, *apiError) {
	h := r.Header.Get("Authorization")
	token, bearer := strings.CutPrefix(h, "Bearer ")
	if !bearer {
		token, bearer = strings.CutPrefix(h, "bearer ")
	}
	token = strings.TrimSpace(token)
	k, ok := a.client(token)
	switch {
	case ok:
		return k, nil
	case h == "" || !bearer || token == "":
		return k, newError(http.StatusUnauthorized, "invalid_request_error", "missing_api_key",
			"You didn't provide an API key. Send it in an Authorization header using Bearer auth (Authorization: Bearer YOUR_KEY).")
	}
	a.log.Debug("refused a request with an unknown key", "remote", r.RemoteAddr)
	return k, newError(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
		"Incorrect API key provided. The keys are in api.keys of the assistant's config.")
}

func (a *API) outcome(client, what string) {
	if a.hooks.Request != nil {
		a.hooks.Request(client, what)
	}
}

func (a *API) models(w http.ResponseWriter, _ *http.Request, _ hashedKey) {
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelInfo{a.modelInfo()}})
}

func (a *API) model(w http.ResponseWriter, r *http.Request, _ hashedKey) {
	id := strings.TrimPrefix(strings.TrimSuffix(r.URL.Path, "/"), "/v1/models/")
	if id != Model {
		writeError(w, newError(http.StatusNotFound, "invalid_request_error", "model_not_found",
			"The model %q does not exist; this server has %q.", printableLine(id, 100), Model).withParam("model"))
		return
	}
	writeJSON(w, http.StatusOK, a.modelInfo())
}

func (a *API) modelInfo() modelInfo {
	return modelInfo{ID: Model, Object: "model", Created: 1700000000, OwnedBy: "nanobot"}
}

// parse reads a chat completion request: the text of its last message,
// which must be the user's.
func parse(w http.ResponseWriter, r *http.Request) (chatRequest, string, *apiError) {
	var req chatRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return req, "", newError(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
				"The request body is larger than %d MB.", maxBody>>20)
		}
		return req, "", invalid("We could not parse the JSON body of your request: %s.", printableLine(err.Error(), 200))
	}
	if len(req.Messages) == 0 {
		return req, "", invalid("'messages' must hold at least one message.").withParam("messages")
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != "user" {
		return req, "", invalid("The last message must be the user's (role \"user\"), not %q: the assistant runs its own tools.",
			printableLine(last.Role, 40)).withParam("messages")
	}
	text, err := last.text()
	if err != nil {
		return req, "", invalid("The last message's %s.", err).withParam("messages")
	}
	if strings.TrimSpace(text) == "" {
		return req, "", invalid("The last message has no text; only text is read.").withParam("messages")
	}
	return req, text, nil
}

var conversationID = lazyre.New(`^[A-Za-z0-9_.@-]{1,64}$`)

// conversation is the chat of a request: the key's own, or a separate one
// the X-Session-Id header or the user field names.
func conversation(k hashedKey, r *http.Request, req chatRequest) string {
	id := strings.TrimSpace(r.Header.Get("X-Session-Id"))
	if id == "" {
		id = strings.TrimSpace(req.User)
	}
	if id == "" {
		return k.chat
	}
	if !conversationID.MatchString(id) {
		sum := sha256.Sum256([]byte(id))
		id = hex.EncodeToString(sum[:8])
	}
	return k.chat + "/" + id
}

// record writes the request's message to the inbox: from then on it is
// answered, whatever happens to the client or the process. A request
// with an Idempotency-Key the client sent before is the same message,
// stored and answered once: it is refused as a repeat.
func (a *API) record(ctx context.Context, p payload, idem string) (turns.InboxItem, *apiError) {
	data, _ := json.Marshal(p)
	var n [8]byte
	if idem != "" {
		sum := sha256.Sum256([]byte(p.Client + "\x00" + idem))
		copy(n[:], sum[:])
	} else {
		rand.Read(n[:])
	}
	it := turns.InboxItem{Channel: Channel, UpdateID: int64(binary.BigEndian.Uint64(n[:]) >> 1), ChatID: p.Chat,
		Payload: data, State: turns.InboxPending, ReceivedAt: a.cfg.Now()}
	id, inserted, err := a.store.RecordInbound(ctx, it)
	switch {
	case err == nil && !inserted:
		return it, newError(http.StatusConflict, "invalid_request_error", "duplicate_request",
			"A request with this Idempotency-Key was received already; its answer is in this conversation.")
	case errors.Is(err, turns.ErrStorageFull):
		return it, newError(http.StatusServiceUnavailable, "server_error", "storage_full",
			"The assistant's disk is full: nothing new can be saved until space is freed. Try again later.")
	case err != nil:
		a.log.Error("record an API message", "chat", p.Chat, "err", err)
		return it, newError(http.StatusInternalServerError, "server_error", "", "The message could not be saved. Try again.")
	}
	it.ID = id
	if a.hooks.Inbound != nil {
		a.hooks.Inbound()
	}
	return it, nil
}

// printableLine cuts s to limit bytes on one line, for echoing a client's
// words in an error.
func printableLine(s string, limit int) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > limit {
		s = strings.ToValidUTF8(s[:limit], "") + "…"
	}
	return s
}
