package yamldoc

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// File is one file to parse: its name and text, or the problems of
// reading it.
type File struct {
	Name string
	Data []byte
	// Problems, when reading the file failed, are delivered in its place
	// (to Parser.Done): Data is not parsed.
	Problems []Problem
}

// Parser parses the documents of files concurrently and hands them to
// Decode in order. Set Decode; the other fields are optional.
type Parser struct {
	// Slow turns the fast path off: every document is parsed by yaml.v3
	// (a test compares the two).
	Slow bool
	// PieceBytes is about how much text one piece holds (0: 256 KiB): a
	// file is cut into pieces at document boundaries, so that large files
	// spread over the workers and only the node trees of a few pieces are
	// alive at once.
	PieceBytes int
	// Lines, if set, gets the text of every document parsed, to find the
	// lines of fields in it later.
	Lines *Lines
	// Scan is called with the text of each readable file (i its index in
	// files) before parsing starts, on up to GOMAXPROCS goroutines at
	// once: it must be safe for that (writing to the i-th of a slice is).
	Scan func(i int, data []byte)
	// Ready is called once every file is scanned, before Decode.
	Ready func()
	// Decode is called for each document, in the order of files and of
	// lines, on the goroutine that called Parse. The nodes of the
	// document are reused once Decode returns: keep nothing that points
	// into them (strings are safe).
	Decode func(Document)
	// Done is called after the last document of each file is decoded,
	// with the problems of parsing (or reading) it: binary data, a
	// document over 8 MiB, syntax errors (Problem.Hides). The slice is
	// reused once Done returns.
	Done func(file string, problems []Problem)
}

// piece is a run of consecutive documents of one file, parsed as a unit;
// done is closed when it is.
type piece struct {
	file  string
	data  []byte // the whole file's text
	spans []span // the piece's documents (none when the file could not be read)
	// first and last say whether the piece is the first or last of its
	// file; docs of a first piece counts the file's documents.
	first, last bool
	docs        int
	parsed      []Document
	arena       *nodeArena // of the nodes of parsed
	problems    []Problem
	panicked    any
	done        chan struct{}
}

// Parse cuts each file into pieces of whole documents (on GOMAXPROCS
// goroutines), parses each piece on a goroutine of its own, at most
// GOMAXPROCS at a time, and decodes the pieces in order on this goroutine
// as they become ready, so the result does not depend on scheduling. At
// most 2*GOMAXPROCS pieces are parsed and not yet decoded, which bounds
// the node trees alive at once; a decoded piece's tree is garbage. A
// panic while parsing is raised again here.
//
// Cutting is exact: a line that starts with "---" begins a document
// wherever it is (splitDocuments), and a syntax error stops at the end of
// its document at the latest, so a piece parses as it would inside its
// file. The problems of parsing a file go to Done after its last document
// is decoded, as for a file parsed whole.
//
// Each document goes through the fast path (fastParse) unless Slow; one
// the fast path leaves is parsed by yaml.v3. A problem in one document
// (binary data, a document over 8 MiB, a syntax error) does not stop the
// file: parsing resumes at the next line that starts with "---".
func (p *Parser) Parse(files []File) {
	spans := p.cut(files)
	if p.Ready != nil {
		p.Ready()
	}
	pieces := p.pieces(files, spans)
	spans = nil
	workers := runtime.GOMAXPROCS(0)
	sem := make(chan struct{}, workers)
	d := decoding{p: p, pieces: pieces}
	for i, pc := range pieces {
		for i-d.next >= 2*workers {
			d.decodeNext()
		}
		if len(pc.spans) == 0 {
			continue // a file that could not be read: done already
		}
		// Wait for a free worker, decoding what is ready meanwhile.
		for acquired := false; !acquired; {
			var ready chan struct{}
			if d.next < i {
				ready = pieces[d.next].done
			}
			select {
			case sem <- struct{}{}:
				acquired = true
			case <-ready:
				d.decodeNext()
			}
		}
		go p.parse(pc, sem)
	}
	for d.next < len(pieces) {
		d.decodeNext()
	}
}

// cut cuts the readable files into documents and scans them, in parallel.
func (p *Parser) cut(files []File) [][]span {
	spans := make([][]span, len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(files) {
					return
				}
				if f := &files[i]; f.Problems == nil {
					spans[i] = fileSpans(f.Data)
					if p.Scan != nil {
						p.Scan(i, f.Data)
					}
				}
			}
		})
	}
	wg.Wait()
	return spans
}

// pieces cuts the documents of each file into pieces of about PieceBytes.
func (p *Parser) pieces(files []File, spans [][]span) []*piece {
	size := p.PieceBytes
	if size <= 0 {
		size = 256 << 10
	}
	var pieces []*piece
	for fi, f := range files {
		if f.Problems != nil {
			// Dropped later if the file is a manifest (reported where it is named).
			pc := &piece{file: f.Name, first: true, last: true, problems: f.Problems, done: make(chan struct{})}
			close(pc.done)
			pieces = append(pieces, pc)
			continue
		}
		sp := spans[fi]
		firstPiece := len(pieces)
		for i := 0; i < len(sp); {
			j, n := i, 0
			for j < len(sp) && (j == i || n < size) {
				n += sp[j].end - sp[j].start
				j++
			}
			pieces = append(pieces, &piece{file: f.Name, data: f.Data, spans: sp[i:j], done: make(chan struct{})})
			i = j
		}
		pieces[firstPiece].first, pieces[firstPiece].docs = true, len(sp)
		pieces[len(pieces)-1].last = true
	}
	return pieces
}

// parse parses pc, on a goroutine of its own, and frees its slot of sem.
func (p *Parser) parse(pc *piece, sem chan struct{}) {
	defer func() {
		pc.panicked = recover()
		<-sem
		close(pc.done)
	}()
	if !p.Slow {
		pc.arena = arenas.Get().(*nodeArena)
	}
	pc.parsed = parseSpans(pc.file, pc.data, pc.spans, pc.arena, &pc.problems)
}

// decoding is the state of handing the parsed pieces to Decode in order.
type decoding struct {
	p      *Parser
	pieces []*piece
	next   int       // the next piece to decode
	held   []Problem // of parsing the file being decoded, given to Done after its last piece
}

// decodeNext waits for the next piece to be parsed and decodes it.
func (d *decoding) decodeNext() {
	p, pc := d.p, d.pieces[d.next]
	<-pc.done
	if pc.panicked != nil {
		panic(pc.panicked)
	}
	if pc.first && pc.docs > 0 && p.Lines != nil {
		p.Lines.reserve(pc.file, pc.docs)
	}
	for _, doc := range pc.parsed {
		p.Decode(doc)
		if p.Lines != nil {
			p.Lines.add(doc)
		}
	}
	if pc.arena != nil {
		pc.arena.release() // nothing decoding built points into the nodes
	}
	d.held = append(d.held, pc.problems...)
	if pc.last {
		if p.Done != nil {
			p.Done(pc.file, d.held)
		}
		d.held = d.held[:0]
	}
	d.pieces[d.next] = nil
	d.next++
}
