"""`testbed report docs`: the generated sections of README.md and docs/, and the CLI
reference among them (every verb, its options and its example, from the parser itself)."""
import argparse

from testbed import PROJECT_ROOT


def _option(action):
    """`-t, --topology TOPOLOGY` / `RUN` / `--json`, as a reader types it."""
    if not action.option_strings:
        name = action.metavar or action.dest.upper()
        if action.nargs == "?":
            return f"[{name}]"
        return f"{name} ..." if action.nargs in ("*", "+", argparse.REMAINDER) else name
    takes = action.nargs != 0 and not isinstance(action, (argparse._StoreTrueAction, argparse._StoreConstAction,
                                                          argparse._StoreFalseAction))
    value = f" {action.metavar or action.dest.upper()}" if takes else ""
    if action.choices and takes and not action.metavar:
        value = " " + "|".join(str(c) for c in action.choices)
    return ", ".join(action.option_strings) + value


def _helps(parser, prefix=""):
    """{verb: its one-line description} of every verb under `parser`."""
    out = {}
    for action in [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]:
        described = {c.dest: c.help for c in action._choices_actions}
        for name, child in action.choices.items():
            verb = f"{prefix} {name}".strip()
            out[verb] = described.get(name, "")
            out.update(_helps(child, verb))
    return out


def verbs(parser):
    """{'wan set': its parser, ...}: every verb that runs something (not a group like `wan`)."""
    out = {}

    def walk(p, prefix):
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            out[prefix] = p
        for action in subs:
            for name, child in action.choices.items():
                walk(child, f"{prefix} {name}".strip())
    walk(parser, "")
    return out


def cli_section(parser):
    """Every verb of `parser` (the command line's, with its examples): what it does, its
    arguments and options, and its example."""
    from testbed.report.markdown import table
    helps = _helps(parser)
    rows = []
    for verb, p in verbs(parser).items():
        opts = [_option(a) for a in p._actions if not isinstance(a, argparse._HelpAction)]
        rows.append([f"`{verb}`", helps.get(verb, "").replace("%%", "%"),
                     ", ".join(f"`{o}`" for o in opts) or "-", "<br>".join(f"`{e}`" for e in getattr(p, "examples", ())) or "-"])
    top = [_option(a) for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]
    return "\n".join([f"Global option (before or after the verb): {', '.join(f'`{o}`' for o in top)}. "
                      "`./tb ARGS` runs `testbed ARGS` after the host set-up; `testbed VERB --help` "
                      "explains each option.", "",
                      table(["command", "what it does", "arguments and options", "example"], rows)])


def generate_docs(parser, root=PROJECT_ROOT, reference_root=None, check=False):
    """The pages under `root` whose generated sections changed and the figures whose bytes
    changed (written unless `check`); `parser`: the command line's, for its reference."""
    from testbed.report import pages
    return pages.generate(root, reference_root, extra={"cli": lambda arg, source: cli_section(parser)},
                          check=check)


def cmd_report_docs(args):
    root = PROJECT_ROOT
    changed = generate_docs(args.parser, root, check=args.check)
    names = ", ".join(str(p.relative_to(root)) for p in changed)
    if args.check:
        print(f"out of date: {names}; run `testbed report docs`" if changed else "generated pages are up to date")
        return 1 if changed else 0
    print(f"rewrote {names}" if changed else "generated pages were already up to date")
    return 0
