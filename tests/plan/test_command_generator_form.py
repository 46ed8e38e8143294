"""The command generator's form re-plans on every change and shows the result in an HTML widget,
never an Output widget (under papermill nbclient answers an Output widget on the kernel's shell
channel, and about one headless run in 45 then hung on the form's cell: jupyter/nbclient issue 312)."""

from __future__ import annotations

import ipywidgets as w

from kimi_runbooks.generator.form import command_generator


def _widgets(box: w.Widget) -> list[w.Widget]:
    children = getattr(box, "children", ())
    return [box, *(x for child in children for x in _widgets(child))]


def test_the_form_replans_on_a_change_into_an_html_view() -> None:
    form = command_generator()
    widgets = _widgets(form)
    assert not any(isinstance(x, w.Output) for x in widgets)
    (view,) = [x for x in widgets if isinstance(x, w.HTML)]
    platform = next(x for x in widgets if isinstance(x, w.Dropdown) and x.description == "platform")
    assert view.value.startswith("<pre>") and "sglang serve" in view.value
    assert "predicted speed" in view.value.lower()
    assert "SGLANG_USE_AITER" not in view.value  # h200, the form's first platform
    platform.value = "mi350x"
    assert "SGLANG_USE_AITER=1" in view.value  # the MI350X recipe's env, re-planned on the change
    assert "<" not in view.value.removeprefix("<pre>").removesuffix("</pre>")  # the plan text is escaped
    version = next(x for x in widgets if isinstance(x, w.Text) and x.description == "SGLang")
    version.value = "<b>$(x)"  # a value the error message quotes back: shown as text, never as markup
    assert "cannot read SGLang version" in view.value and "&lt;b&gt;$(x)" in view.value
    assert "<" not in view.value.removeprefix("<pre>").removesuffix("</pre>")
