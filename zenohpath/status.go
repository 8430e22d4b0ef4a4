package zenohpath

import (
	"encoding/json"
	"net/http"
	"sort"
)

// StatusPath is where HandleStatus is served by `picobridge router --metrics`.
const StatusPath = "/routerz"

// Status is a snapshot of the router (style.md convention 14: a typed
// method plus a thin handler).
type Status struct {
	ZID         string     `json:"zid"`
	Listen      []string   `json:"listen"`
	Faces       []FaceInfo `json:"faces"`
	Subscribers int        `json:"subscribers"`
	Queryables  int        `json:"queryables"`
	Tokens      int        `json:"tokens"`
}

// Status returns the router's faces and entity counts.
func (r *Router) Status() *Status {
	faces := r.Faces()
	sort.Slice(faces, func(i, j int) bool { return faces[i].ID < faces[j].ID })
	st := &Status{ZID: r.zid.String(), Listen: r.Endpoints(), Faces: faces}
	r.mu.Lock()
	st.Subscribers, st.Queryables, st.Tokens = len(r.ents[kindSub]), len(r.ents[kindQbl]), len(r.ents[kindTok])
	r.mu.Unlock()
	return st
}

// HandleStatus serves Status as JSON.
func (r *Router) HandleStatus(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(r.Status())
}
