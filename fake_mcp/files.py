"""The file reads of the fake world: a file's metadata, its download ticket, and the download itself.

Why: 81f67c8d's `markdown overwrite|patch` preview downloads the current content before it diffs (helpers/markdown.go
previewMarkdownOverwriteDiff and runMarkdownPatch -> fetchMarkdownContent -> drive.go downloadFromDrive): the
download tool answers a ``resourceUrl`` that the binary then fetches with a plain HTTP GET. An empty success stops
it ('incomplete download info: resourceUrl is empty'). Here every file ID names a Markdown file whose content the
server itself serves on loopback (``GET /files/<id>``, :data:`FILES_PATH`), so nothing leaves the machine.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote

from .world_state import Payload, WorldState, text_arg

#: Where the server serves the files a download ticket points at.
FILES_PATH = "/files/"

#: The content of every file of the world (a Markdown document: the files the markdown commands read).
FILE_TEXT = "# 合成测试文件\n\n合成测试内容。\n"


class FileReads(WorldState):
    """drive/get_file_info, drive/download_file and doc/download_file (``FILE_TOOLS``)."""

    #: The server's own URL, set by the server once it listens (a download ticket is an absolute URL).
    base_url: str = ""

    def get_file_info(self, args: dict[str, Any]) -> Payload:
        """``fileId``: the file's metadata (drive.go parseRemoteFileName reads ``result.fileName``, else ``name`` +
        ``extension``; helpers resolveFileDomain takes any success as "the file is on the drive")."""
        file_id = text_arg(args, "fileId")
        return {"success": True, "result": {"fileId": file_id, "fileName": f"{file_id}.md", "name": file_id,
                                            "extension": "md", "size": len(FILE_TEXT.encode("utf-8"))}}

    def download_file(self, args: dict[str, Any]) -> Payload:
        """``fileId`` (drive) or ``nodeId`` (doc): a download ticket (doc.go parseDownloadInfo reads
        ``result.resourceUrl``, a string or the first of a list, and ``result.headers``)."""
        file_id = text_arg(args, "fileId" if "fileId" in args else "nodeId")
        return {"success": True, "result": {"resourceUrl": self.file_url(file_id), "headers": {}}}

    def file_url(self, file_id: str) -> str:
        """The loopback URL the server serves ``file_id`` at."""
        return f"{self.base_url}{FILES_PATH}{quote(file_id, safe='')}"

    @staticmethod
    def file_content(path: str) -> bytes | None:
        """The body of ``GET path`` (a file of the world), or None when ``path`` names none."""
        if not path.startswith(FILES_PATH) or not unquote(path[len(FILES_PATH):].split("?", 1)[0]):
            return None
        return FILE_TEXT.encode("utf-8")



#: ``(product, tool)`` -> FileReads method (the products 81f67c8d calls them on: drive first, doc for a wiki node).
FILE_TOOLS: dict[tuple[str, str], str] = {
    ("drive", "get_file_info"): "get_file_info",
    ("drive", "download_file"): "download_file",
    ("doc", "download_file"): "download_file",
}
