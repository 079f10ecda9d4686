"""The Backend setting: offered as the engine finds the packages, kept between runs, and
handed to the engine through the bridge and the model controller."""

from __future__ import annotations

from desktop_app.controllers.model_controller import ModelController
from desktop_app.views.settings_dialog import Preferences, SettingsDialog
from engine.encoding.backend_choice import default_backend
from engine.encoding.backends import AUTO, BACKENDS, available_backends, missing_modules


def test_backend_preference_round_trips_and_unknown_names_fall_back(settings):
    assert Preferences.load(settings).backend == AUTO   # fast by default
    Preferences(backend="openvino-int8").save(settings)
    assert Preferences.load(settings).backend == "openvino-int8"
    Preferences(backend="torch").save(settings)
    assert Preferences.load(settings).backend == "torch"
    settings.setValue("engine/backend", "tensorrt")
    assert Preferences.load(settings).backend == AUTO


def test_dialog_offers_installed_backends_and_greys_out_the_others(qtbot):
    dialog = SettingsDialog(Preferences(backend="torch"))
    qtbot.addWidget(dialog)
    combo = dialog.backend
    offered = {combo.itemData(i): combo.model().item(i).isEnabled()
               for i in range(combo.count())}
    assert list(offered) == [AUTO, *BACKENDS]
    usable = {AUTO, *available_backends()}
    assert {name for name, enabled in offered.items() if enabled} == usable
    for i in range(combo.count()):
        if combo.itemData(i) not in usable:
            backend = BACKENDS[combo.itemData(i)]
            why = (f"needs duplens[{backend.extra}]" if missing_modules(backend)
                   else "needs a CPU with bf16 units")
            assert why in combo.itemText(i)
    assert dialog.preferences().backend == "torch"


def test_bf16_on_a_cpu_without_its_units_is_greyed_out_and_says_why(qtbot, monkeypatch):
    from engine.encoding import cpu_features

    monkeypatch.setattr(cpu_features, "cpu_flags", lambda: {"avx2", "avx512f"})
    dialog = SettingsDialog(Preferences(backend="openvino-bf16"))
    qtbot.addWidget(dialog)
    combo = dialog.backend
    at = combo.findData("openvino-bf16")
    assert not combo.model().item(at).isEnabled()
    why = ("needs duplens[openvino]" if missing_modules(BACKENDS["openvino-bf16"])
           else "needs a CPU with bf16 units")
    assert combo.itemText(at).endswith(why)
    assert dialog.preferences().backend == AUTO       # the saved choice cannot run here


def test_the_default_is_automatic_and_says_what_it_picks(qtbot):
    dialog = SettingsDialog(Preferences())
    qtbot.addWidget(dialog)
    assert dialog.preferences().backend == AUTO
    assert BACKENDS[default_backend("cpu")].label in dialog.backend.currentText()


def test_a_saved_backend_that_is_no_longer_installed_shows_automatic(qtbot, monkeypatch):
    monkeypatch.setattr("engine.encoding.backends.available_backends", lambda: ["torch"])
    dialog = SettingsDialog(Preferences(backend="onnx"))
    qtbot.addWidget(dialog)
    assert dialog.preferences().backend == AUTO


def test_bridge_hands_the_backend_to_the_open_project(bridge, qtbot, questions_project):
    with qtbot.waitSignal(bridge.projectOpened, timeout=60_000):
        bridge.open_project(questions_project)
    bridge.set_preferences("cpu", 32, "onnx")
    project = bridge.current_project()
    assert project.model.preferences.backend == "onnx" and bridge.backend_preference == "onnx"
    assert (project.model.preferences.device, project.model.preferences.batch_size) == ("cpu", 32)


def test_changing_only_the_backend_reloads_the_active_model_not_the_default(
        bridge, qtbot, questions_project):
    with qtbot.waitSignal(bridge.projectOpened, timeout=60_000):
        bridge.open_project(questions_project)
    project = bridge.current_project()
    before, encoded = project.model.row()["id"], project.info()["encoded"]
    bridge.set_preferences("cpu", 32, "torch")
    models = ModelController(bridge)
    with qtbot.waitSignal(models.changed, timeout=120_000) as blocker:
        models.change_backend()
    assert blocker.args[0]["info"]["encoded"] == encoded > 0
    assert project.model.row()["id"] == before


def test_a_fresh_window_leaves_the_backend_to_the_engine(qtbot, bridge_without_model, settings):
    """No saved setting: the window hands the engine "auto", so a new project gets the
    quality gate's CPU default, not torch (what the window used to hand it)."""
    from desktop_app.main_window import MainWindow

    w = MainWindow(bridge_without_model, settings)
    qtbot.addWidget(w)
    assert bridge_without_model.backend_preference == AUTO
    bridge_without_model.set_preferences("cpu", 64, w.preferences.backend)
    assert bridge_without_model._new_backend() == default_backend("cpu")
