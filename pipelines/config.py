"""Pipeline definitions: a small TOML file → :class:`Pipeline`."""

from __future__ import annotations

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from dataclasses import dataclass, field
from pathlib import Path

from obook.to_parquet import TABLES
from obook.checks import check_choice
from obook.errors import ObookError

__all__ = ["Pipeline", "PipelineError", "load"]

#: the scheme of a Dask executor (``dask://host:port``), in any case
DASK = "dask://"


class PipelineError(ObookError):
    """A pipeline definition is wrong, or the pipeline cannot run."""


@dataclass(frozen=True)
class Pipeline:
    source_dir: Path
    glob: str
    dataset: Path
    tables: tuple[str, ...] = ("bbo",)
    workers: int | None = None
    on_error: str = "raise"
    levels: int = 10
    tickers: tuple[str, ...] | None = None
    format: str | None = None       # the days' feed format; None: told from each file
    executor: str = "local"
    days_at_once: int = 1
    retries: int = 0
    dask_resources: dict = field(default_factory=dict)
    path: Path | None = None     # the TOML file

    @property
    def dask_address(self) -> str | None:
        """``host:port`` of ``executor = "dask://host:port"``; None for local."""
        return self.executor[len(DASK):] if self.executor.startswith(DASK) else None

    def options(self) -> dict:
        """The options that shape the output: a day converted with others is redone."""
        options = {"tables": list(self.tables), "on_error": self.on_error}
        if self.levels != 10:           # (the defaults stay out: older manifests stay valid)
            options["levels"] = self.levels
        if self.tickers:
            options["tickers"] = list(self.tickers)
        if self.format is not None:
            options["format"] = self.format
        return options


#: the integer keys' ranges. workers: convert's own bound (a day asking more would fail);
#: days_at_once: days in flight at once, each a process with its own book workers (local)
#: or a Dask task; retries: extra attempts of a day that fails
_BOUNDS = {"workers": (1, 64), "days_at_once": (1, 64), "retries": (0, 100)}

_KNOWN = {
    "source": {"directory", "glob"},
    "convert": {"tables", "workers", "on_error", "levels", "tickers", "format"},
    "dataset": {"path"},
    "run": {"executor", "days_at_once", "retries", "dask_resources"},
}


def load(path) -> Pipeline:
    """Read and check a pipeline TOML file (relative paths are relative to it; ``~`` is the
    home directory)."""
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text())
    except OSError as e:
        raise PipelineError(f"{path}: cannot read pipeline: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise PipelineError(f"{path}: not valid TOML: not UTF-8 text (byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise PipelineError(f"{path}: not valid TOML: {e}") from None
    for section, value in doc.items():
        if section not in _KNOWN:
            raise PipelineError(f"{path}: unknown section [{section}]; expected {', '.join(_KNOWN)}")
        if not isinstance(value, dict):     # [[convert]], or convert = 5
            raise PipelineError(f"{path}: [{section}] must be a table ([{section}] and its keys), not "
                                f"{'a list' if isinstance(value, list) else repr(value)}")
        for key in value:
            if key not in _KNOWN[section]:
                raise PipelineError(f"{path}: unknown key {key!r} in [{section}]; expected "
                                    f"{', '.join(sorted(_KNOWN[section]))}")
    src, conv, ds, run = (doc.get(s, {}) for s in ("source", "convert", "dataset", "run"))
    base = path.resolve().parent

    def need(section: dict, name: str, key: str):
        if key not in section:
            raise PipelineError(f"{path}: [{name}] {key} is required")
        return section[key]

    tables = conv.get("tables", ["bbo"])
    if isinstance(tables, str):
        tables = [t.strip() for t in tables.split(",") if t.strip()]
    if not isinstance(tables, list):
        raise PipelineError(f"{path}: [convert] tables must be a list of tables ({', '.join(TABLES)}), "
                            f"not {tables!r}")
    if not tables or not all(isinstance(t, str) and t.lower() in TABLES for t in tables):
        raise PipelineError(f"{path}: [convert] tables must be some of {', '.join(TABLES)}, got {tables}")
    tables = [t.lower() for t in tables]
    executor = run.get("executor", "local")
    if isinstance(executor, str) and executor[:len(DASK)].lower() == DASK:     # (the address as given)
        if not executor[len(DASK):].strip():
            raise PipelineError(f"{path}: [run] executor must be one of local, {DASK}host:port, not "
                                f"{executor!r} (it names no scheduler)")
        executor = DASK + executor[len(DASK):]
    else:
        executor = _choice(path, "[run] executor", executor, ("local", f"{DASK}host:port"))
    on_error = _choice(path, "[convert] on_error", conv.get("on_error", "raise"), ("raise", "skip"))
    levels = conv.get("levels", 10)
    if not isinstance(levels, int) or isinstance(levels, bool) or not 1 <= levels <= 50:
        raise PipelineError(f"{path}: [convert] levels must be an integer from 1 to 50, not {levels!r}")
    tickers = conv.get("tickers")
    if isinstance(tickers, str):
        tickers = [t.strip() for t in tickers.split(",") if t.strip()]
    if tickers is not None and (not isinstance(tickers, list) or not tickers
                                or not all(isinstance(t, str) and t.strip() for t in tickers)):
        raise PipelineError(f"{path}: [convert] tickers must be a list of tickers, not {conv.get('tickers')!r}")
    fmt = conv.get("format")
    if fmt is not None and fmt != "":     # '' is detection, as obook's format=''
        from obook.to_parquet import format_names

        fmt = _choice(path, "[convert] format", fmt, format_names())
    fmt = fmt or None
    ints = {}
    for section, key, v, (lo, hi) in (("convert", "workers", conv.get("workers"), _BOUNDS["workers"]),
                                      ("run", "days_at_once", run.get("days_at_once", 1), _BOUNDS["days_at_once"]),
                                      ("run", "retries", run.get("retries", 0), _BOUNDS["retries"])):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < lo):
            raise PipelineError(f"{path}: [{section}] {key} must be a {'non-negative' if lo == 0 else 'positive'} "
                                f"integer, not {v!r}")
        if v is not None and v > hi:
            raise PipelineError(f"{path}: [{section}] {key} must be from {lo} to {hi}, not {v!r}")
        ints[key] = v
    for section, key, value in (("source", "glob", src.get("glob", "")), ("source", "directory", src.get("directory", "")),
                                ("dataset", "path", ds.get("path", ""))):
        if not isinstance(value, str):
            raise PipelineError(f"{path}: [{section}] {key} must be text, not {value!r}")
        if "\0" in value:
            raise PipelineError(f"{path}: [{section}] {key} {value!r}: a path holds no NUL character")
        if key != "glob" and key in (src if section == "source" else ds) and not value.strip():
            # (it would be this file's folder: "." says so)
            raise PipelineError(f"{path}: [{section}] {key} is empty; give a folder ('.' for this file's own)")
    glob = str(src.get("glob", "*.NASDAQ_ITCH50*"))
    if not Path(glob).parts or Path(glob).is_absolute() or ".." in Path(glob).parts:   # ("", ".": no files)
        raise PipelineError(f"{path}: [source] glob must be a pattern inside the source directory "
                            f"(relative, no '..'), not {glob!r}")
    dataset = (base / _home(path, "[dataset] path", need(ds, "dataset", "path"))).resolve()
    if dataset.exists() and not dataset.is_dir():
        raise PipelineError(f"{path}: [dataset] path {dataset} is a file, not a directory")
    return Pipeline(
        source_dir=(base / _home(path, "[source] directory", need(src, "source", "directory"))).resolve(),
        glob=glob,
        dataset=dataset,
        tables=tuple(dict.fromkeys(tables)),
        workers=ints["workers"],
        on_error=on_error,
        levels=levels,
        tickers=tuple(sorted({t.strip() for t in tickers})) if tickers else None,
        format=fmt,
        executor=executor,
        days_at_once=ints["days_at_once"],
        retries=ints["retries"],
        dask_resources=_resources(path, run.get("dask_resources", {})),
        path=path,
    )


#: the formats whose day is several files read as one feed, and what they are: a pipeline
#: converts one file a day
_SEVERAL_FILES = {"szse-csv": "a Shenzhen vendor CSV day is several files (an orders and a ticks file a security)"}


def several_files(fmt: str) -> str:
    """Why the days of format ``fmt`` cannot be a pipeline's (its day is several files), or ``""``."""
    if fmt not in _SEVERAL_FILES:
        return ""
    return (f"{_SEVERAL_FILES[fmt]} read as one feed; a pipeline converts one file a day: convert such a day "
            "with obook convert FILES... OUTDIR")


def _home(path, name: str, value: str) -> Path:
    """``value`` with a leading ``~`` or ``~user`` made that home directory; a PipelineError
    naming the key ``name`` when there is no such user (or no home directory)."""
    try:
        return Path(value).expanduser()
    except RuntimeError:
        user = value[1:].split("/", 1)[0]
        who = (f"no user {user} (~user is that user's home directory)" if user
               else "no home directory to put for ~ (HOME is not set)")
        raise PipelineError(f"{path}: {name} {value!r}: {who}") from None


def _choice(path, name: str, value, choices) -> str:
    """``value`` of the key ``name`` (``[section] key``) as one of ``choices``, in any case (as
    obook's own options take them), else a PipelineError listing the choices."""
    try:
        chosen = check_choice(name, value, choices)
    except ObookError as e:
        raise PipelineError(f"{path}: {e}") from e
    return chosen


def _resources(path, value) -> dict:
    """[run] dask_resources: a table of resource names and amounts."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, (int, float))
                                              and not isinstance(v, bool) for k, v in value.items()):
        raise PipelineError(f"{path}: [run] dask_resources must be a table of names and amounts "
                            f"(e.g. {{ memory = 8e9 }}), not {value!r}")
    for name, amount in value.items():
        if not amount >= 0 or amount == float("inf"):       # (NaN compares false)
            raise PipelineError(f"{path}: [run] dask_resources: {name} must be an amount of 0 or more, "
                                f"not {amount!r}")
    return dict(value)
