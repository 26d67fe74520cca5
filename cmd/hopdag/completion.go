package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/hopdag/hopdag"
	"github.com/hopdag/hopdag/release"
)

// completion prints a completion script for bash or zsh. The script
// completes commands, each command's flags, file names where a flag takes
// a path, the words of -o and of the flags that take one of a few
// (outputFormats, wordFlags), and the catalog's versions after --from and --to: it asks
// `hopdag completion versions DIR` for them, DIR being the catalog named on
// the command line.
func (c *cli) completion(ctx context.Context) int {
	args := c.fs.Args()
	if len(args) == 2 && args[0] == "versions" {
		return c.completeVersions(args[1])
	}
	if len(args) != 1 {
		return c.usageError("want bash or zsh")
	}
	switch args[0] {
	case "bash":
		fmt.Fprint(c.stdout, bashCompletion(c.commands))
	case "zsh":
		// From $fpath (hopdag completion zsh > "${fpath[1]}/_hopdag"),
		// compinit reads the #compdef line and autoloads the file as the
		// function _hopdag, whose first call runs the script: it defines
		// the bash function _hopdag in its place, registers it, and
		// completes that first time through it too. Sourced, only the
		// registration happens.
		fmt.Fprint(c.stdout, "#compdef hopdag\n# zsh completion for hopdag: source <(hopdag completion zsh), or hopdag completion zsh > \"${fpath[1]}/_hopdag\"\n"+
			"autoload -U +X bashcompinit && bashcompinit\n", bashCompletion(c.commands),
			"if [[ ${funcstack[1]-} = _hopdag ]]; then\n  _bash_complete -F _hopdag\nfi\n")
	default:
		return c.usageError(fmt.Sprintf("want bash or zsh, got %q", args[0]))
	}
	return exitOK
}

// completeVersions prints the versions of the catalog in dir, one a line,
// ascending (on a catalog of several tracks, as TRACK=VERSION, the form
// --from and --to take there, by track); nothing (and exit 0) when it does not load, so that a
// half-typed command line completes to nothing rather than to an error.
func (c *cli) completeVersions(dir string) int {
	var (
		cat *release.Catalog
		err error
	)
	if dir == "-" {
		cat, err = release.Load(hopdag.SampleCatalog())
	} else {
		cat, err = release.LoadDir(dir)
	}
	if err != nil {
		return exitOK
	}
	byTrack := map[string]map[string]release.Version{}
	for _, r := range cat.Releases {
		if byTrack[r.Track] == nil {
			byTrack[r.Track] = map[string]release.Version{}
		}
		byTrack[r.Track][r.Version.Original()] = r.Version
	}
	for _, track := range slices.Sorted(maps.Keys(byTrack)) {
		vs := slices.Collect(maps.Values(byTrack[track]))
		slices.SortFunc(vs, func(a, b release.Version) int { return a.Compare(b) })
		for _, v := range vs {
			if len(byTrack) > 1 {
				fmt.Fprintln(c.stdout, track+"="+v.Original())
			} else {
				fmt.Fprintln(c.stdout, v.Original())
			}
		}
	}
	return exitOK
}

// pathFlags take a file or directory name.
var pathFlags = []string{"state", "apply-dir", "log-file", "kubeconfig", "verify-key", "cache", "docker-config"}

// outputFormats are the values of -o, by command, as its help lists them.
var outputFormats = map[string][]string{
	"plan":   {"text", "json", "yaml"},
	"graph":  {"mermaid", "dot", "json"},
	"status": {"table", "json", "yaml"},
}

// wordFlags take one of a few words, whatever the command.
var wordFlags = map[string][]string{
	"mode":       {"eager", "batch"},
	"log-format": {"text", "json"},
	"on-failure": {"rollback", "rollback-run"},
	"verify":     {"required", "optional"},
}

// wordCases is the script's case arms that complete the words of -o (by
// command) and of wordFlags.
func wordCases() string {
	var b strings.Builder
	b.WriteString("    -o|--o)\n      case \"$cmd\" in\n")
	for _, name := range slices.Sorted(maps.Keys(outputFormats)) {
		fmt.Fprintf(&b, "        %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", name, strings.Join(outputFormats[name], " "))
	}
	b.WriteString("      esac\n      return ;;\n")
	for _, name := range slices.Sorted(maps.Keys(wordFlags)) {
		fmt.Fprintf(&b, "    --%s|-%s)\n      COMPREPLY=($(compgen -W %q -- \"$cur\"))\n      return ;;\n", name, name, strings.Join(wordFlags[name], " "))
	}
	return b.String()
}

// flagWords are the flags of fs as completion offers them: --name, and
// -o for a flag of one letter.
func flagWords(fs *flag.FlagSet) []string {
	var flags []string
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) == 1 {
			flags = append(flags, "-"+f.Name)
		} else {
			flags = append(flags, "--"+f.Name)
		}
	})
	return flags
}

func bashCompletion(commands map[string]command) string {
	names := slices.Sorted(maps.Keys(commands))
	words := slices.Sorted(slices.Values(append(slices.Clone(names), "bundle")))
	var cases strings.Builder
	for _, name := range names {
		flags := flagWords(newCLI(env{}, name, commands[name]).fs)
		fmt.Fprintf(&cases, "    %s) flags=%q ;;\n", name, strings.Join(flags, " "))
	}
	subs := slices.Sorted(maps.Keys(bundleCommands))
	cases.WriteString("    bundle)\n      case \"${COMP_WORDS[2]}\" in\n")
	for _, sub := range subs {
		fs, _, _, _ := bundleFlagSet(sub, io.Discard)
		fmt.Fprintf(&cases, "        %s) flags=%q ;;\n", sub, strings.Join(flagWords(fs), " "))
	}
	cases.WriteString("      esac ;;\n")
	var paths []string
	for _, f := range pathFlags {
		paths = append(paths, "--"+f, "-"+f)
	}
	return fmt.Sprintf(`# bash completion for hopdag: eval "$(hopdag completion bash)"
_hopdag() {
  local cur prev cmd flags dir
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W %q -- "$cur"))
    return
  fi
  cmd="${COMP_WORDS[1]}"
  # bash splits --from platform=13 at "=" (COMP_WORDBREAKS): the words
  # after --from or --to are joined again, and the versions of the track
  # before the last "=" complete what follows it.
  if [ "$cur" = "=" ] || [ "$prev" = "=" ]; then
    local i=$COMP_CWORD whole="" found="" part="$cur" pair track v vs=""
    [ "$cur" = "=" ] && part=""
    while [ "$i" -gt 2 ]; do
      whole="${COMP_WORDS[i]}$whole"
      case "${COMP_WORDS[i-1]}" in
        --from|-from|--to|-to) found=1; break ;;
      esac
      i=$((i-1))
    done
    if [ -n "$found" ]; then
      pair="${whole##*,}"
      track="${pair%%%%=*}"
      for v in $("${COMP_WORDS[0]}" completion versions "${COMP_WORDS[2]}" 2>/dev/null); do
        [[ "$v" == "$track="* ]] && vs="$vs ${v#"$track="}"
      done
      COMPREPLY=($(compgen -W "$vs" -- "$part"))
      return
    fi
  fi
  case "$prev" in
    --from|-from|--to|-to)
      dir="${COMP_WORDS[2]}"
      COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" completion versions "$dir" 2>/dev/null)" -- "$cur"))
      return ;;
    %s)
      COMPREPLY=($(compgen -f -- "$cur"))
      return ;;
%s  esac
  case "$cmd" in
%s    *) flags="" ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  elif [ "$cmd" = completion ]; then
    COMPREPLY=($(compgen -W "bash zsh" -- "$cur"))
  elif [ "$cmd" = bundle ] && [ "$COMP_CWORD" -eq 2 ]; then
    COMPREPLY=($(compgen -W %q -- "$cur"))
  else
    COMPREPLY=($(compgen -d -- "$cur"))
  fi
}
complete -F _hopdag hopdag
`, strings.Join(words, " "), strings.Join(paths, "|"), wordCases(), cases.String(), strings.Join(subs, " "))
}
