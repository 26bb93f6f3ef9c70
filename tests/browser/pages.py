"""What the journeys do to a page: open it, wait for an element, answer a confirmation (ids: docs/console.md)."""

from __future__ import annotations

import contextlib
from typing import Any

from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

WAIT_S = 30


def wait(browser: Any, timeout: float = WAIT_S) -> WebDriverWait:
    """Polls a condition; an element htmx swapped out meanwhile (the live job panel and table, every 1 s) is
    looked up again at the next poll instead of failing the wait."""
    return WebDriverWait(browser, timeout, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,))


def find(browser: Any, selector: str, timeout: float = WAIT_S) -> WebElement:
    """The element once it is in the page (htmx may swap it in after the load)."""
    return wait(browser, timeout).until(ec.presence_of_element_located((By.CSS_SELECTOR, selector)))


def all_of(browser: Any, selector: str) -> list[WebElement]:
    return browser.find_elements(By.CSS_SELECTOR, selector)


def visit(browser: Any, url: str, page: str) -> WebElement:
    """Open ``url`` and wait until its <main id="content"> says it is ``page``."""
    browser.get(url)
    return on_page(browser, page)


def on_page(browser: Any, page: str, timeout: float = WAIT_S) -> WebElement:
    return find(browser, f'main#content[data-page="{page}"]', timeout)


def confirm(browser: Any) -> None:
    """Accept the "are you sure?" a button may ask (hx-confirm, or an onsubmit confirm), if it asks."""
    with contextlib.suppress(TimeoutException):
        wait(browser, 3).until(ec.alert_is_present()).accept()


def no_alert(browser: Any) -> bool:
    try:
        browser.switch_to.alert  # noqa: B018  # the property raises when no alert is open
    except NoAlertPresentException:
        return True
    return False


def attribute(browser: Any, selector: str, name: str) -> str | None:
    """An attribute of the element now matching ``selector``, read again if htmx swaps the element meanwhile."""
    return wait(browser).until(lambda b: [find(b, selector).get_attribute(name)])[0]


def submit(browser: Any, selector: str) -> None:
    """Click the element now matching ``selector``, found again if htmx swaps it meanwhile."""
    wait(browser).until(lambda b: find(b, selector).click() or True)
