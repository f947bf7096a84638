"""Field values as generators write them (strings, numbers, objects of steps, lists) read as text."""


def as_text(value: object, indent: str = "") -> str:
    """A string stripped; an object as 'Key: value' lines (nested ones indented); a list one item a line."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, dict):
        lines = []
        for key, item in value.items():
            body = as_text(item, indent + "  ")
            if isinstance(item, (dict, list)) and body:
                lines.append(f"{indent}{key}:\n{body}")
            elif body:
                lines.append(f"{indent}{key}: {body}")
        return "\n".join(lines)
    if isinstance(value, list):
        return "\n".join(f"{indent}{text}" if not isinstance(item, (dict, list)) else text
                         for item in value if (text := as_text(item, indent)))
    return str(value).strip()


def joined(*parts: str) -> str:
    """Non-empty parts, one paragraph each."""
    return "\n\n".join(p for p in parts if p)
