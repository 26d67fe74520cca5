package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Acquire takes the lock; see Lock. A lease whose holder's process died
// (or whose File was closed) is taken over at once, before it expires.
func (f *File) Acquire(ctx context.Context, holder string, ttl time.Duration) (Lease, error) {
	if err := checkAcquire(holder, ttl); err != nil {
		return Lease{}, err
	}
	var lease Lease
	err := f.locked(ctx, func(now time.Time) error {
		r, err := f.readRecord()
		if err != nil {
			return err
		}
		gone := false
		if r.held(now) {
			if gone, err = f.holderGone(r.Token); err != nil {
				return err
			}
		}
		if lease, err = r.acquire(now, holder, ttl, gone); err != nil {
			return err
		}
		h, err := f.lockHolder(lease.Token)
		if err != nil {
			return errorf("acquire: %w", err)
		}
		if err := f.writeRecord(r); err != nil {
			h.Close()
			os.Remove(h.Name())
			return errorf("acquire: %w", err)
		}
		f.holders[lease.Token] = h
		f.removeStaleHolders(lease.Token)
		return nil
	})
	return lease, err
}

// Refresh extends the lease; see Lock.
func (f *File) Refresh(ctx context.Context, l Lease) (Lease, error) {
	var lease Lease
	err := f.locked(ctx, func(now time.Time) error {
		r, err := f.readRecord()
		if err != nil {
			return err
		}
		if lease, err = r.refresh(now, l); err != nil {
			return err
		}
		if err := f.writeRecord(r); err != nil {
			return errorf("refresh: %w", err)
		}
		return nil
	})
	return lease, err
}

// Release frees the lock; see Lock.
func (f *File) Release(ctx context.Context, l Lease) error {
	return f.locked(ctx, func(now time.Time) error {
		r, err := f.readRecord()
		if err != nil {
			return err
		}
		// Whatever the outcome, this handle no longer holds the lease.
		if h, ok := f.holders[l.Token]; ok {
			h.Close()
			delete(f.holders, l.Token)
		}
		if err := r.release(now, l); err != nil {
			return err
		}
		if err := f.writeRecord(r); err != nil {
			return errorf("release: %w", err)
		}
		os.Remove(f.holderPath(l.Token))
		return nil
	})
}

// readRecord reads LeaseFile; a zero record when it does not exist.
func (f *File) readRecord() (*record, error) {
	path := filepath.Join(f.dir, LeaseFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &record{}, nil
	}
	if err != nil {
		return nil, errorf("read lease: %w", err)
	}
	r := new(record)
	if err := json.Unmarshal(b, r); err != nil {
		return nil, &CorruptError{Path: path, Err: err}
	}
	if err := r.validate(); err != nil {
		return nil, &CorruptError{Path: path, Err: err}
	}
	return r, nil
}

func (r *record) validate() error {
	switch {
	case r.Last == 0 && r.Token == 0 && r.Holder == "":
		return errors.New("no token: the lease record is empty")
	case r.Token > r.Last:
		return fmt.Errorf("token %d is above the last token %d", r.Token, r.Last)
	case r.Token != 0 && (r.Holder == "" || r.TTL <= 0 || r.Expires.IsZero()):
		return fmt.Errorf("lease %d lacks a holder, a ttl or an expiry", r.Token)
	}
	return nil
}

func (f *File) writeRecord(r *record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return f.write(LeaseFile, append(b, '\n'))
}

func (f *File) holderPath(token uint64) string {
	return filepath.Join(f.dir, holderPrefix+strconv.FormatUint(token, 10)+".lock")
}

// lockHolder creates and flocks the holder file of a new lease.
func (f *File) lockHolder(token uint64) (*os.File, error) {
	h, err := os.OpenFile(f.holderPath(token), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	ok, err := tryLock(h)
	if err == nil && !ok {
		err = fmt.Errorf("%s is locked by another process: was the lease file restored from a backup?", h.Name())
	}
	if err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// holderGone reports whether nobody holds the holder file of the lease
// token: its process exited, or closed the File it acquired through.
func (f *File) holderGone(token uint64) (bool, error) {
	h, err := os.OpenFile(f.holderPath(token), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, errorf("acquire: %w", err)
	}
	defer h.Close()
	ok, err := tryLock(h)
	if err != nil {
		return false, errorf("acquire: %w", err)
	}
	return ok, nil
}

// removeStaleHolders deletes the holder files of tokens below current.
// A paused holder that still has one open keeps its (unlinked) file and
// its flock, which no longer matter: its token is fenced.
func (f *File) removeStaleHolders(current uint64) {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), holderPrefix)
		if !ok {
			continue
		}
		t, err := strconv.ParseUint(strings.TrimSuffix(name, ".lock"), 10, 64)
		if err == nil && t < current {
			os.Remove(filepath.Join(f.dir, e.Name()))
		}
	}
}
