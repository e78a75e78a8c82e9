"""The demo's recipe job: a raw customers CSV export, prepared by a Wrangler recipe.

`write_raw_customers` writes the export (generated, deterministic: messy names, test accounts,
rows without an id, notes with quoted commas); `CUSTOMERS_RECIPE` cleans it; `customers_job`
says where it reads and writes under a base folder (`<data>/recipes` in the demo).
"""

from __future__ import annotations

import csv
import io
import os
import random
from pathlib import Path

from lineage_assets.recipes.recipe_job import DatasetRef, RecipeJob

CUSTOMERS_RECIPE = """\
// Prepare the CRM's customers export for the analytics lake.
parse-as-csv :body ',' true
drop :body
cleanse-column-names
rename :full_name :name
trim :name
titlecase :name
split-email :e_mail
hash :e_mail SHA-256
mask-number :phone XXX-XXX-####
set-type :customer_id long
// test accounts and rows without an id go away
filter-rows-on condition-true country = 'ZZ'
send-to-error exp:{ customer_id is null } missing_id 'no customer id'
set-column :signup_year cast(substr(signup_date, 1, 4) as int)
uppercase :country
drop :notes
"""

HEADER = ["Customer Id", "Full Name", "E-Mail", "Phone", "Country", "Signup Date", "Notes"]
_FIRST = ["ada", "grace", "ALAN", "  edsger", "barbara ", "Ken", "dennis", "margaret", "tim", "Linus"]
_LAST = ["lovelace", "HOPPER", "turing", "dijkstra", "liskov", "thompson", "ritchie", "hamilton"]
_COUNTRIES = ["us", "fr", "de", "jp", "br", "ZZ"]


def write_raw_customers(path: str | Path, rows: int = 500, seed: int = 11) -> Path:
    """The raw export as CSV text (header first), written atomically."""
    rng = random.Random(seed)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    for i in range(1, rows + 1):
        first, last = rng.choice(_FIRST), rng.choice(_LAST)
        customer_id = "" if i % 97 == 0 else str(1000 + i)
        email = f"{first.strip().lower()}.{last.lower()}{i}@example.{rng.choice(['com', 'org'])}"
        phone = f"{rng.randint(200, 999)}-{rng.randint(200, 999)}-{rng.randint(0, 9999):04d}"
        signup = f"{rng.randint(2015, 2026)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        notes = rng.choice(["", "vip", "moved, new address", 'said "hi"'])
        writer.writerow([customer_id, f"{first} {last}", email, phone, rng.choice(_COUNTRIES), signup,
                         notes])
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(out.getvalue())
    os.replace(tmp, target)
    return target


def customers_job(base: str | Path) -> RecipeJob:
    """The recipe job of the demo, reading `<base>/raw/customers.csv` and writing
    `<base>/prepared/customers` (Parquet)."""
    root = Path(base).resolve()
    return RecipeJob(
        namespace="wrangler", name="prepare_customers", recipe=CUSTOMERS_RECIPE,
        source=DatasetRef(str(root / "raw" / "customers.csv")),
        target=DatasetRef(str(root / "prepared" / "customers")),
    )
