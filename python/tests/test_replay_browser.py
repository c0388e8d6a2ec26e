"""The replay viewer in a real browser: headless Chromium driven by Selenium (the system's
browser and driver, Debian's `chromium` and `chromium-driver`, which `.ci/run` installs). It
steps through a recorded game with the keyboard and checks that the page shows the recorded
boards, actions and probabilities, that the game list switches games, that the page logs no
console errors, and takes the README's screenshot (docs/replay_viewer.png)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tcgleague import train as train_cli
from tcgleague.replay import __main__ as replay_cli
from tcgleague.replay.viewer import REPLAYS_FILE, VIEWER_FILE, read_replays

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "replay_viewer.png"
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="selenium is not installed (make test-slow installs it)"
    )
    if BROWSER is None or DRIVER is None:
        pytest.skip("no Chromium and chromedriver installed (Debian: apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = BROWSER
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def recording(smoke_checkpoint, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("viewer")
    assert replay_cli.main([str(smoke_checkpoint), "--opponent", "greedy", "--games", "4", "--out", str(out)]) == 0
    return out


def shown(driver) -> dict:
    """What the page shows now: status line, board, the chosen move, the probability bars."""
    from selenium.webdriver.common.by import By

    text = lambda css: driver.find_element(By.CSS_SELECTOR, css).get_attribute("textContent")  # noqa: E731
    bars = [
        (row.find_element(By.CLASS_NAME, "label").get_attribute("textContent"),
         row.find_element(By.CLASS_NAME, "pct").get_attribute("textContent"))
        for row in driver.find_elements(By.CSS_SELECTOR, "#probs .prob")
    ]  # fmt: skip
    return {"status": text("#status"), "board": text("#board"), "move": text("#chosen .move"), "bars": bars}


def recorded(game: dict, k: int) -> dict:
    """What the page should show at decision k of `game`."""
    step, strings = game["steps"][k], game["strings"]
    bars = [(strings[step["l"][i]], f"{100 * p:.1f}%") for i, p in step.get("p", [])]
    return {"board": "\n".join(strings[i] for i in step["b"]), "move": strings[step["l"][step["a"]]], "bars": bars}


def press(driver, key: str, times: int = 1) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    for _ in range(times):
        ActionChains(driver).send_keys(key).perform()


def test_the_viewer_shows_the_recorded_game_step_by_step_and_switches_games(browser, recording):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    games = read_replays(recording / REPLAYS_FILE)["games"]
    browser.get((recording / VIEWER_FILE).as_uri())
    first = games[0]
    for k in range(min(12, len(first["steps"]))):
        page = shown(browser)
        assert f"Decision {k + 1} of {len(first['steps'])}" in page["status"]
        assert {key: page[key] for key in ("board", "move", "bars")} == recorded(first, k), f"decision {k}"
        press(browser, Keys.ARROW_RIGHT)
    press(browser, Keys.END)
    assert {key: shown(browser)[key] for key in ("board", "move", "bars")} == recorded(first, len(first["steps"]) - 1)
    press(browser, Keys.HOME)
    press(browser, Keys.ARROW_LEFT)  # stays at the first decision
    assert shown(browser)["board"] == recorded(first, 0)["board"]

    button = browser.find_elements(By.CSS_SELECTOR, "#game-list button")[2]
    button.click()
    assert button.get_attribute("aria-current") == "true"
    page = shown(browser)
    assert page["status"].startswith(f"game 3 of {len(games)}") and page["board"] == recorded(games[2], 0)["board"]

    # the README's screenshot: the first game at the policy's decision with the most alternatives
    browser.find_elements(By.CSS_SELECTOR, "#game-list button")[0].click()
    k = max(
        range(len(first["steps"])),
        key=lambda i: len(first["steps"][i].get("p", [])) * 100 + len(first["steps"][i]["l"]),
    )
    press(browser, Keys.ARROW_RIGHT, k)
    assert shown(browser)["bars"] == recorded(first, k)["bars"]
    SCREENSHOT.parent.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(SCREENSHOT))

    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert not errors, errors


@pytest.fixture(scope="module")
def poker_recording(tmp_path_factory) -> Path:
    """A short Kuhn run's checkpoint, four of its hands against the caller recorded."""
    base = tmp_path_factory.mktemp("kuhn")
    small = ["--env.num-games", "64", "--train.batch-size", "1024", "--train.minibatch-size", "256"]
    run = [
        "--config",
        str(ROOT / "configs" / "kuhn.ini"),
        "--train.total-timesteps",
        "2048",
        "--train.eval-interval",
        "0",
    ]
    assert train_cli.main([*run, *small, "--base.experiments-dir", str(base)]) == 0
    (checkpoint,) = base.glob("*/model_*.pt")
    out = tmp_path_factory.mktemp("poker_viewer")
    assert replay_cli.main([str(checkpoint), "--games", "4", "--out", str(out)]) == 0
    return out


def test_the_viewer_shows_a_poker_hand_from_each_deciders_seat(browser, poker_recording):
    from selenium.webdriver.common.keys import Keys

    games = read_replays(poker_recording / REPLAYS_FILE)["games"]
    browser.get((poker_recording / VIEWER_FILE).as_uri())
    first = games[0]
    for k in range(len(first["steps"])):
        page = shown(browser)
        assert {key: page[key] for key in ("board", "move", "bars")} == recorded(first, k), f"decision {k}"
        assert "your card:" in page["board"] and "pot:" in page["board"]
        press(browser, Keys.ARROW_RIGHT)
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert not errors, errors
