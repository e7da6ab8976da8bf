"""Added animals and vehicles in Chinese text, where the English lexicon cannot look.

Chinese has no spaces to split into words, so this reads the text for the
everyday words that name an animal or a vehicle: one the output uses is added
when the prompt (and its image's caption) uses neither it nor a word of its
family (狗/犬/小狗, 鸟/鸽子/海鸥, 汽车/轿车) nor the class word (动物, 车辆).
WordNet has no Chinese, so the table here is the team's own list; it is a
floor, not a lexicon. People are not judged: the words for them are too many
and too varied (渔夫, 游客, 老人) to tell a named one from a new one.
Not here: English text (``assess`` with ``lexicon``), lost subjects in CJK
(``promptx.text.validate.subject_problem``).
"""

from __future__ import annotations

import re

from .assessment import Finding

__all__ = ["cjk_added_subjects"]

# families: a word is licensed by any word of its family; the first line of a class is its class
# words
_FAMILIES = {
    "animal": """动物 生物 宠物
        狗 犬 小狗 猎犬
        猫 小猫 猫咪
        鸟 鸽 鹰 海鸥 天鹅 孔雀 企鹅 麻雀 燕子 鸭 鹅 鸡 鹤
        鱼 鲨 鲸 海豚 金鱼 锦鲤
        马 小马 马驹
        牛 小牛 牦牛
        羊 小羊 山羊 绵羊
        猪
        兔
        鹿
        熊 熊猫
        虎 老虎
        狮 狮子
        狼
        狐 狐狸
        猴 猴子
        象 大象
        蛇
        龟 乌龟
        蝴蝶
        蜜蜂
        蛙 青蛙
        鼠 老鼠 松鼠
        骆驼
        斑马
        长颈鹿
        蝙蝠""",
    "vehicle": """车辆 交通工具 载具
        汽车 轿车 卡车 公交车 出租车 跑车 吉普车 货车 面包车
        自行车 单车
        摩托车
        火车 列车 电车 地铁 高铁 动车
        飞机 直升机
        船 帆船 游艇 轮船 小船 渔船 独木舟 小舟
        马车""",
}
# words that hold an animal or vehicle word but name something else
_NOT_A_SUBJECT = (
    "鸡蛋",
    "马路",
    "牛奶",
    "猪肉",
    "牛肉",
    "羊毛",
    "鱼鳞",
    "象征",
    "印象",
    "景象",
    "现象",
    "形象",
    "气象",
    "想象",
    "对象",
    "象牙",
    "船坞",
    "马赛克",
    "熊熊",
    "鸟瞰",
    "马上",
    "龟裂",
    "虎口",
    "鼠标",
    "钓鱼竿",
    "鱼竿",
    "鱼线",
    "鱼钩",
    "鱼鳞",
    "车站",
    "车道",
    "车窗",
    "车灯",
    "蝴蝶结",
    "牛角",
    "抽象",
    "马尾",
    "牛仔",
    "鸭舌帽",
    "龙虾",
)
# a pictured animal or vehicle: "印着一只白鹤图案" (a crane printed as a pattern)
_PICTURED = re.compile(
    r"(\S{1,3})(?=(?:的)?(?:图案|图样|花纹|纹样|标志|造型|剪影|玩偶|贴纸|印花|刺绣|雕塑|雕像|模型|玩具))"
)


def _families() -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """class -> [(word, the words that license it)]."""
    out: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for cls, block in _FAMILIES.items():
        lines = [line.split() for line in block.strip().splitlines()]
        class_words = tuple(lines[0])
        out[cls] = [(w, tuple(line) + class_words) for line in lines[1:] for w in line]
    return out


_BY_CLASS = _families()


def _plain(text: str) -> str:
    """``text`` without the compounds that hold an animal or vehicle word but name something
    else, and without pictured ones."""
    for compound in _NOT_A_SUBJECT:
        text = text.replace(compound, "")
    return _PICTURED.sub("", text)


def cjk_added_subjects(prompt: str, text: str) -> list[Finding]:
    """Findings for the animals and vehicles the Chinese ``text`` names and ``prompt`` does not
    license ("老渔夫在湖边钓鱼" -> "一只黑色的大狗": an added animal)."""
    given, said = _plain(prompt), _plain(text)
    found = []
    for cls, entries in _BY_CLASS.items():
        added = [
            w
            for w, licensed_by in entries
            if w in said and not any(x in given for x in licensed_by)
        ]
        added = [w for w in added if not any(w != o and w in o for o in added)]  # 小狗 covers 狗
        if added:
            found.append(
                Finding(
                    kind="added_subject",
                    code=f"added_{cls}",
                    words=added[:4],
                    detail=f"the output adds {'an' if cls[0] in 'aeiou' else 'a'} {cls} the "
                    f"prompt does not have: " + ", ".join(f'"{w}"' for w in added[:4]),
                )
            )
    return found
