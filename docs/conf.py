"""Sphinx configuration of the sklearn_ltr documentation.

Build with ``docs/build.sh`` (warnings are errors). Needs no network, and neither does a
reader of the built site: no intersphinx, the pydata-sphinx-theme (its fonts and scripts are
bundled), MathJax shipped into ``_static/mathjax`` by sphinx-mathjax-offline, and an example
gallery (sphinx-gallery) whose scripts run at build time on small synthetic data.
"""

import functools
import html
import importlib
import inspect
import os
import re
import sys

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform

# The package of this checkout, even when another version is installed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import sklearn_ltr

project = "sklearn_ltr"
author = "sklearn_ltr developers"
copyright = "sklearn_ltr developers"
release = sklearn_ltr.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # Copies MathJax 3 into _static/mathjax: formulas render with no network.
    "sphinx-mathjax-offline",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
root_doc = "index"
default_role = "literal"  # `x` in a docstring is code, as in scikit-learn

# autosummary writes one stub page per public name into docs/generated/ (git-ignored).
autosummary_generate = True
autosummary_imported_members = False
# Overridden methods without a docstring (``forward`` of a torch module) stay undocumented
# rather than showing the docstring of the torch or scikit-learn method they override.
autodoc_inherit_docstrings = False
autodoc_typehints = "none"  # the numpydoc Parameters sections say it
autodoc_member_order = "groupwise"
add_module_names = False

# numpydoc renders Parameters/Returns/Attributes; members come from the autosummary class template.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# Every reference must resolve (``-n``), except those into other projects' documentation
# (scikit-learn, torch, LightGBM, ..., the Python standard library), which are not linked because
# the build must work offline: no intersphinx.
nitpicky = True
_EXTERNAL = (
    "torch", "sklearn", "numpy", "scipy", "skorch", "lightgbm", "dask", "distributed", "pandas",
    "functools", "typing", "collections", "pathlib", "os", "io", "warnings", "inspect",
)  # fmt: skip
nitpick_ignore_regex = [(r"py:.*", rf"{name}(\..*)?") for name in _EXTERNAL]

# MathJax from the local copy that sphinx-mathjax-offline writes into _static/mathjax (not a CDN).
mathjax_path = "mathjax/tex-chtml.js"

# The theme of scikit-learn, NumPy and pandas. No icon links, no version switcher, no
# announcement: nothing that the reader's browser would fetch from another site.
html_theme = "pydata_sphinx_theme"
html_title = f"sklearn_ltr {release}"
# _static/sklearn_ltr.css: long code lines wrap, wide equations scroll in their own box, figures
# fill the column, and long names in the sidebars break at underscores, never mid-word.
html_static_path = ["_static"]
html_css_files = ["sklearn_ltr.css"]
html_theme_options = {
    "logo": {"text": f"sklearn_ltr {version}"},
    "navbar_align": "left",
    "navbar_end": ["theme-switcher"],
    "icon_links": [],
    "header_links_before_dropdown": 5,
    "secondary_sidebar_items": ["page-toc"],
    "show_toc_level": 2,
    # The primary sidebar opens only the section of the current page.
    "show_nav_level": 1,
    "navigation_with_keys": False,
    "show_prev_next": True,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_context = {"default_mode": "light"}
# Primary sidebars. Top-level pages without sub-pages get none (the theme would show an empty
# "Section Navigation" heading), which also gives their figures and tables the full width. The
# API reference gets its pages grouped by module (sidebar-nav-api.html, _api_sidebar below)
# instead of the theme's one flat list of ~150 dotted names.
html_sidebars = {
    "benchmarks": [],
    "code_layout": [],
    "contributing": [],
    "api": ["sidebar-collapse", "sidebar-nav-api"],
    "generated/*": ["sidebar-collapse", "sidebar-nav-api"],
}

# --- Example gallery ---------------------------------------------------------------------------
# examples/plot_<n>_*.py run at build time, in the order of <n>, each in a few seconds on two
# CPU cores (small synthetic data, few epochs, one torch thread); their text, output and
# figures become docs/auto_examples/ (git-ignored). Execution times are written to
# auto_examples/sg_execution_times.rst (and the site's page of that name).
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    # An example whose script is unchanged since the last build (the MD5 in auto_examples/) is
    # not run again; docs/build.sh deletes auto_examples/ under CI, so CI runs them all.
    "run_stale_examples": False,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "remove_config_comments": True,
    "download_all_examples": False,
    "min_reported_time": 0,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib", "seaborn"),
    # Only what an example prints is shown, not the repr of a cell's last value (``fit``
    # returns the estimator, and its HTML repr would follow every training cell).
    "capture_repr": (),
}


# --- Re-exported names -------------------------------------------------------------------------
# Every public object is documented once, at the path users import it from (``sklearn_ltr.X`` for
# the names of ``sklearn_ltr.__all__``, else ``sklearn_ltr.<subpackage>.X``). A reference that
# Sphinx cannot find is looked up as Python would: as a dotted path, then as a name of the module
# whose docstring holds it (the page's object and, for a class, the sklearn_ltr classes it
# inherits from); when that gives an object documented under another public path, the reference
# links there. A name that is private or undocumented stays unresolved and fails the build.

@functools.cache
def _resolve(dotted):
    """The Python object at a dotted path (attributes allowed), or None."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        try:
            for attr in parts[split:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _docstring_modules(node):
    """Modules a relative name in a docstring may live in, most specific first."""
    modules = []
    page = node.get("refdoc", "").rpartition("/")[2]
    documented = _resolve(page) if page.startswith("sklearn_ltr.") else None
    owners = inspect.getmro(documented) if inspect.isclass(documented) else (documented,)
    for owner in owners:
        module = getattr(owner, "__module__", None) or ""
        if module.startswith("sklearn_ltr") and module not in modules:
            modules.append(module)
    # A summary line in an autosummary table: the row's first cell links to the object.
    row = node.parent
    while row is not None and not isinstance(row, nodes.row):
        row = row.parent
    if row is not None:
        for link in row.findall(lambda n: isinstance(n, (addnodes.pending_xref, nodes.reference))):
            name = link.get("reftarget") or link.get("refuri", "").rpartition("#")[2]
            obj = _resolve(name) if name.startswith("sklearn_ltr.") else None
            module = getattr(obj, "__module__", None) or ""
            if module.startswith("sklearn_ltr") and module not in modules:
                modules.append(module)
            break
    context = node.get("py:module")
    if context and context not in modules:
        modules.insert(0, context)
    return modules


def _missing_reference(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    if target.startswith("sklearn_ltr."):
        candidates = [target]
    else:
        candidates = [f"{module}.{target}" for module in _docstring_modules(node)]
    domain = env.get_domain("py")
    for candidate in candidates:
        if candidate.split(".")[-1].startswith("_"):
            continue
        obj = _resolve(candidate)
        if obj is None:
            continue
        matches = [(name, entry) for name, entry in domain.objects.items()
                   if name != target and not entry.aliased and _resolve(name) is obj]
        if matches:
            # An inherited method is one function under several classes: prefer the documented
            # name that shares the longest dotted suffix with the reference (its own class).
            name, entry = max(matches, key=lambda match: _common_suffix(match[0], candidate))
            node["reftarget"] = name
            return domain.resolve_xref(env, node["refdoc"], app.builder, entry.objtype, name, node, contnode)
    return None


def _common_suffix(a, b):
    count = 0
    for x, y in zip(reversed(a.split(".")), reversed(b.split(".")), strict=False):
        if x != y:
            break
        count += 1
    return count


# --- Comments of module-level data -------------------------------------------------------------
# ``LOSSES``, ``ALIASES``, ``COMBINATIONS``, ... are defined (with a ``#:`` comment) in private
# modules and re-exported by their package; autodoc looks for the comment in the package's
# ``__init__.py`` and would otherwise show the docstring of ``dict`` or ``tuple``.

def _data_comment(fullname, obj):
    from sphinx.pycode import ModuleAnalyzer

    package, _, attr = fullname.rpartition(".")
    for modname, module in sorted(sys.modules.items()):
        if not (modname == package or modname.startswith(package + ".")) or getattr(module, attr, None) is not obj:
            continue
        try:
            docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
        except Exception:  # no source to analyse: try the next module
            continue
        if ("", attr) in docs:
            return list(docs[("", attr)])
    return None


def _process_docstring(app, what, name, obj, options, lines):
    if what != "data":
        return
    builtin_doc = type(obj).__doc__ and "\n".join(lines).strip() == inspect.cleandoc(type(obj).__doc__).strip()
    if builtin_doc or not lines:
        comment = _data_comment(name, obj)
        lines[:] = comment if comment else []


# --- Members shown on a class page -------------------------------------------------------------
# The class template lists members inherited from other sklearn_ltr classes (``fit``, ``predict``,
# ``score`` of the rankers' base classes) but not those of scikit-learn, torch or the builtins
# (``get_params``, ``set_fit_request``, ``torch.nn.Module.to``, ...), documented by their projects.

def _skip_member(app, what, name, obj, skip, options):
    if what != "class" or skip:
        return None
    target = obj.fget if isinstance(obj, property) else obj
    module = getattr(target, "__module__", None) or ""
    if not module.startswith("sklearn_ltr"):
        return True
    return None


# --- No e-mail links ---------------------------------------------------------------------------
# reStructuredText makes every standalone "name@host" a mailto: link, and in this project every
# such text is a metric at a cut-off: NDCG@10, MAP@10, precision@5. The transform turns those
# links back into the text they were made from, in every page and docstring; an explicit link
# (`text <mailto:...>`_) is left alone, and docs/build.sh fails on any mailto: in the built site.

class _StandaloneEmailsAsText(SphinxTransform):
    default_priority = 100  # any: no other transform looks at mailto: references

    def apply(self, **kwargs):
        for ref in list(self.document.findall(nodes.reference)):
            uri = ref.get("refuri", "")
            if uri.startswith("mailto:") and ref.astext() == uri.removeprefix("mailto:"):
                ref.replace_self(nodes.Text(ref.astext()))


# --- The gallery's table of execution times, without remote scripts ----------------------------
# sphinx-gallery writes sg_execution_times.rst with a raw HTML block that loads jQuery, DataTables
# and Bootstrap from CDNs to make the table sortable. The table is kept; the block is dropped, so
# that no page fetches anything from another site (docs/build.sh checks that).

def _drop_remote_table_scripts(app):
    gallery_dirs = app.config.sphinx_gallery_conf["gallery_dirs"]
    if isinstance(gallery_dirs, str):
        gallery_dirs = [gallery_dirs]
    for directory in (app.srcdir, *(os.path.join(app.srcdir, d) for d in gallery_dirs)):
        path = os.path.join(directory, "sg_execution_times.rst")
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines(keepends=True)
        kept, skipping = [], False
        for line in lines:
            if line.strip() == ".. raw:: html" and not skipping:
                skipping = True
                continue
            if skipping and line.strip().startswith(".. list-table::"):
                skipping = False
            if not skipping:
                kept.append(line)
        with open(path, "w", encoding="utf-8") as file:
            file.writelines(kept)


# --- The API reference's sidebar and long names ------------------------------------------------
# The primary sidebar of api.html and generated/*: one group per module section of api.rst (in its
# order), holding the pages that the section's autosummary tables generate, each under its own
# name (``ndcg_score``, not ``sklearn_ltr.metrics.ndcg_score``) with a line-break opportunity
# (<wbr>) after each underscore. Rendered by _templates/sidebar-nav-api.html with the markup of the
# theme's sidebar-nav-bs.html; the group of the current page is open. The same pages' title
# (``sklearn_ltr.utils.estimator_checks.check_...``), "On this page" entries
# (``LambdaMARTRanker.to_local()``) and previous/next links get a <wbr> after each dot and
# underscore, so that they wrap between words instead of mid-word or off the column.

def _api_groups(env):
    """``[(title, anchor, [docname, ...]), ...]``: the module sections of api.rst and their pages."""
    toc = env.tocs.get("api")
    page = toc.next_node(nodes.list_item) if toc is not None else None
    sections = page.next_node(nodes.bullet_list) if page is not None else None
    groups = []
    for section in sections.children if sections is not None else ():
        reference = section.next_node(nodes.reference)
        title = reference.astext().partition(":")[0].strip()  # "sklearn_ltr.metrics: ranking metrics"
        docnames = [doc for toctree in section.findall(addnodes.toctree) for _, doc in toctree["entries"]]
        if docnames:
            groups.append((title, reference.get("anchorname", ""), docnames))
    return groups


def _api_pages(app, pagename, templatename, context, doctree):
    if pagename != "api" and not pagename.startswith("generated/"):
        return
    uri = functools.partial(app.builder.get_relative_uri, pagename)
    lines = ['<ul class="nav bd-sidenav">']
    for title, anchor, docnames in _api_groups(app.env):
        current = pagename in docnames
        state = ' class="current"' if current else ""
        lines.append(f'<li class="toctree-l1 has-children{" current active" if current else ""}">'
                     f'<a class="reference internal" href="{uri("api")}{anchor}">{html.escape(title)}</a>'
                     f'<details{" open" if current else ""}><summary><span class="toctree-toggle" '
                     'role="presentation"><i class="fa-solid fa-chevron-down"></i></span></summary>'
                     f"<ul{state}>")
        for doc in docnames:
            name = html.escape(doc.rpartition(".")[2]).replace("_", "_<wbr>")  # generated/sklearn_ltr.X
            if doc == pagename:
                lines.append('<li class="toctree-l2 current active"><a aria-current="page" '
                             f'class="current reference internal" href="#">{name}</a></li>')
            else:
                lines.append(f'<li class="toctree-l2"><a class="reference internal" href="{uri(doc)}">{name}</a></li>')
        lines.append("</ul></details></li>")
    lines.append("</ul>")
    context["api_sidebar"] = "\n".join(lines)

    # Names in the title, "On this page" and the previous/next links break at dots and underscores.
    def breakable(text):
        return re.sub(r"([._])", r"\1<wbr>", text)

    if pagename != "api" and context.get("body"):
        context["body"] = re.sub(r"<h1>([^<]*)<", lambda m: f"<h1>{breakable(m[1])}<", context["body"], count=1)
    if context.get("toc"):
        context["toc"] = re.sub(r'<span class="pre">([^<]*)</span>',
                                lambda m: f'<span class="pre">{breakable(m[1])}</span>', context["toc"])
    for link in (context.get("prev"), context.get("next")):
        if link and link.get("title", "").startswith("sklearn_ltr."):
            link["title"] = breakable(link["title"])


def setup(app):
    # Before the theme's handler (priority 500), which drops sidebar templates that render empty.
    app.connect("html-page-context", _api_pages, priority=400)
    app.add_transform(_StandaloneEmailsAsText)
    # After sphinx-gallery's own builder-inited handler (priority 500) has written the files.
    app.connect("builder-inited", _drop_remote_table_scripts, priority=900)
    app.connect("missing-reference", _missing_reference)
    app.connect("autodoc-process-docstring", _process_docstring, priority=400)
    app.connect("autodoc-skip-member", _skip_member)
