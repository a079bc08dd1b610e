"""Generate examples/sample-corpus/battery-safety-guide.pdf (a real, text-based PDF).

The PDF is committed; this script only documents how it was made and lets you
re-create it. It needs fpdf2, which is NOT a dependency of amem-db, so run it in a
scratch virtualenv:

    python -m venv .pdfvenv && .pdfvenv/bin/pip install fpdf2==2.8.9
    .pdfvenv/bin/python examples/make_sample_pdf.py

The output is deterministic for a given fpdf2 version (fixed creation date).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from fpdf import FPDF

OUT = Path(__file__).resolve().parent / "sample-corpus" / "battery-safety-guide.pdf"
TITLE = "Battery Safety and Recycling Guide"

# One list per page: ("h1"|"h2"|"p"|"li", text). Core PDF fonts are Latin-1 only.
PAGES: list[list[tuple[str, str]]] = [
    [
        ("h1", TITLE),
        (
            "p",
            (
                "Brightwater Electronics - for the Loom Wireless Keyboard (MLWK3LL/A, MLWK3B/A, "
                "MLWK3D/A), the Tern H700 headphones (TRN-H700-BLK, TRN-H700-SND) and the 65 W "
                "USB-C charger CHG-65C. Edition 3, March 2024."
            ),
        ),
        ("h2", "About the batteries in your product"),
        (
            "p",
            (
                "Loom keyboards and Tern headphones use rechargeable lithium-ion polymer batteries. "
                "The Loom keyboard battery is rated 3.7 V, 2000 mAh (7.4 Wh). The Tern H700 battery "
                "is rated 3.7 V, 700 mAh (2.6 Wh). The batteries are sealed inside the product and "
                "are not meant to be replaced by the user."
            ),
        ),
        (
            "p",
            (
                "Lithium-ion batteries store a lot of energy in a small space. Used correctly they "
                "are safe for many years, but physical damage, overheating or a faulty charger can "
                "cause them to swell, leak or, in rare cases, catch fire."
            ),
        ),
        ("h2", "Warning signs"),
        ("p", "Stop using the product at once and contact support if you notice any of these:"),
        ("li", "the case bulges, the keyboard no longer lies flat, or an ear cup does not close;"),
        ("li", "the product becomes hot to the touch while charging (warm is normal);"),
        ("li", "a sweet or chemical smell, hissing, or visible leaking;"),
        ("li", "the battery drains from full to empty within a day of normal use."),
        (
            "p",
            (
                "A swollen battery is covered by the Limited Warranty within the warranty period. "
                "Do not puncture it, press on it or try to open the case."
            ),
        ),
    ],
    [
        ("h1", "Charging safely"),
        (
            "p",
            (
                "Charge with the supplied USB-C cable and a charger that meets the USB Power "
                "Delivery specification, such as the Brightwater CHG-65C. The keyboard draws at "
                "most 5 V, 1.5 A; the headphones at most 5 V, 1 A. A more powerful charger is safe "
                "because the product only draws what it needs."
            ),
        ),
        ("li", "Charge at room temperature, between 10 and 35 degrees Celsius."),
        ("li", "Do not charge under a pillow, on a bed or in direct sunlight."),
        ("li", "Do not use a cable with a damaged plug or exposed wires."),
        ("li", "Unplug the charger when charging is complete if you leave the room for a long time."),
        ("h2", "Storage"),
        (
            "p",
            (
                "If you will not use the product for more than a month, charge it to about 50 "
                "percent, switch it off and store it in a cool, dry place. Recharge it to 50 "
                "percent every six months. A battery stored completely empty for a long time can "
                "be permanently damaged; this is not covered by the warranty."
            ),
        ),
        ("h2", "Travelling by air"),
        (
            "p",
            (
                "Both batteries are far below the 100 Wh limit that airlines set for batteries in "
                "carry-on luggage, so you can take the keyboard and the headphones in the cabin. "
                "Keep them in your carry-on bag rather than in checked luggage. The Tern H700 "
                "comes with a two-prong airplane adapter for in-flight entertainment systems."
            ),
        ),
    ],
    [
        ("h1", "Recycling and take-back"),
        (
            "p",
            (
                "Do not throw Brightwater products or their batteries in household waste. "
                "Electronic products and batteries must be collected separately and recycled."
            ),
        ),
        ("h2", "Free take-back program"),
        (
            "p",
            (
                "Brightwater takes back any Brightwater product for recycling, free of charge, "
                "whether or not it still works. Request a prepaid recycling label in the support "
                "portal under Recycling. You do not need an order number. Take-back parcels are "
                "sent to the returns center in Reno, Nevada, where batteries are removed by "
                "trained staff and sent to a certified recycler."
            ),
        ),
        (
            "p",
            (
                "Customers who recycle a Loom keyboard through the program receive a 15 percent "
                "discount code for a new keyboard, valid for 90 days."
            ),
        ),
        ("h2", "Collection points"),
        (
            "p",
            (
                "In the European Union and the United Kingdom you can also hand in the product at "
                "any shop that sells electrical equipment of the same kind, and at municipal "
                "collection points. In the United States, many electronics retailers accept "
                "rechargeable batteries at in-store drop-off bins."
            ),
        ),
        ("h2", "Before you send a product for recycling"),
        ("li", "Remove it from your Bluetooth devices and reset it (Loom: hold Fn+Esc for 10 seconds)."),
        ("li", "Tape over the USB-C port to prevent short circuits in transit."),
        ("li", "Do not send swollen or leaking batteries by post; contact support for instructions."),
    ],
]


class GuidePDF(FPDF):
    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", "I", 8)
        self.cell(0, 10, f"Brightwater Electronics - {TITLE} - page {self.page_no()}", align="C")


def build() -> None:
    pdf = GuidePDF(format="A4")
    pdf.set_title(TITLE)
    pdf.set_author("Brightwater Electronics")
    pdf.set_subject("Battery safety, charging, storage, air travel and recycling")
    pdf.set_creation_date(dt.datetime(2024, 3, 1, tzinfo=dt.UTC))
    pdf.set_margins(20, 20, 20)
    pdf.set_auto_page_break(auto=True, margin=20)
    for blocks in PAGES:
        pdf.add_page()
        for kind, text in blocks:
            if kind == "h1":
                pdf.set_font("Helvetica", "B", 18)
                pdf.multi_cell(0, 9, text, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(3)
            elif kind == "h2":
                pdf.ln(2)
                pdf.set_font("Helvetica", "B", 13)
                pdf.multi_cell(0, 7, text, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(1)
            elif kind == "li":
                pdf.set_font("Helvetica", "", 11)
                pdf.set_x(26)
                pdf.multi_cell(0, 5.5, "- " + text, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(1)
            else:
                pdf.set_font("Helvetica", "", 11)
                pdf.multi_cell(0, 5.5, text, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(2.5)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(OUT))
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(PAGES)} pages)")


if __name__ == "__main__":
    build()
