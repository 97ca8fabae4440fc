package host

import (
	"time"
)

// Spec is the agent a host runs: ptyproc's Spec in a form that crosses a
// socket.
type Spec struct {
	Argv       []string `json:"argv"`
	Dir        string   `json:"dir,omitempty"`
	Env        []string `json:"env,omitempty"`
	Unset      []string `json:"unset,omitempty"`
	Cols       uint16   `json:"cols,omitempty"`
	Rows       uint16   `json:"rows,omitempty"`
	LogPath    string   `json:"logPath,omitempty"`
	Scrollback int      `json:"scrollback,omitempty"` // the emulator's history in rows (0: 5000)
	// Git, when set, has the host work in a clone of the remote rather
	// than in Dir (which is on the hub): see Git.
	Git *Git `json:"git,omitempty"`
	// Files are files of the hub the agent's argv names (a prompt too
	// long for a command line): a host with Git writes each in its own
	// directory and names the copy in the argv instead.
	Files []File `json:"files,omitempty"`
}

// File is one of Spec.Files: its path on the hub and what it holds.
type File struct {
	Path string `json:"path"`
	Data string `json:"data"`
}

// Meta names a host: which agent of which instance it runs and where it
// listens. The runner writes it beside the socket so hosts can be found
// again after the engine is gone.
type Meta struct {
	Instance string `json:"instance"` // the engine instance the host belongs to (its .chorus dir)
	AgentID  string `json:"agentID"`
	TaskID   string `json:"taskID,omitempty"`
	Socket   string `json:"socket"`
	HostPID  int    `json:"hostPID,omitempty"`
	Version  int    `json:"version"`
}

// Info is what a host tells an engine about its agent on connecting.
type Info struct {
	Meta      Meta      `json:"meta"`
	Spec      Spec      `json:"spec"`
	Pid       int       `json:"pid"`
	StartTime uint64    `json:"startTime"`
	Started   time.Time `json:"started"`
	Binary    string    `json:"binary,omitempty"` // the host's chorus version
}
