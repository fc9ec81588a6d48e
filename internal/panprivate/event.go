package panprivate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// User is a user id: an integer in [0, universe_size), used as it is, or a
// string, mapped into the universe with a keyed hash. Its JSON form is a
// number or a string.
type User struct {
	id    uint64
	name  string
	named bool
}

// UserID returns the integer user id.
func UserID(id uint64) User { return User{id: id} }

// userName returns a string user id.
func userName(name string) User { return User{name: name, named: true} }

// MarshalJSON encodes u as a number or a string.
func (u User) MarshalJSON() ([]byte, error) {
	if u.named {
		return json.Marshal(u.name)
	}
	return []byte(strconv.FormatUint(u.id, 10)), nil
}

// UnmarshalJSON accepts a non-negative integer or a string.
func (u *User) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("panprivate: user: %w", err)
		}
		*u = userName(s)
		return nil
	}
	id, err := strconv.ParseUint(string(data), 10, 64)
	if err != nil {
		return errors.New("panprivate: user must be a non-negative integer or a string")
	}
	*u = UserID(id)
	return nil
}

// Event is one stream element: an appearance of User, or with Delete its
// deletion (the 0/1 turnstile model: the user's entry is re-drawn from the
// "never appeared" law). Its JSON form is {"user": ..., "op": "delete"}.
type Event struct {
	User   User
	Delete bool
}

type eventJSON struct {
	User User   `json:"user"`
	Op   string `json:"op,omitempty"`
}

// MarshalJSON encodes e as {"user": ..., "op": "delete"} (op omitted for an
// appearance).
func (e Event) MarshalJSON() ([]byte, error) {
	j := eventJSON{User: e.User}
	if e.Delete {
		j.Op = "delete"
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes {"user": ..., "op": "insert" | "delete"}; op
// defaults to insert.
func (e *Event) UnmarshalJSON(data []byte) error {
	var j struct {
		User *User  `json:"user"`
		Op   string `json:"op"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	if j.User == nil {
		return errors.New("panprivate: event without user")
	}
	switch j.Op {
	case "", "insert":
		*e = Event{User: *j.User}
	case "delete":
		*e = Event{User: *j.User, Delete: true}
	default:
		return errors.New("panprivate: event op must be insert or delete")
	}
	return nil
}
